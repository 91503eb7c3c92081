// Grid plans (kernel_plan.h): the kFlat vector width chosen from a kernel's
// element types, size and op count, and the element coverage of the flat
// schedule's two loops, simulated from the plan exactly as the NVPTX
// emitter lays them out (no LLVM, no GPU).
#include "jit/codegen/kernel_plan.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jit/codegen/nvptx/fuse_for_testing.h"

namespace jitd::codegen {
namespace {

// The plan of the only kernel of `text`.
GridPlan PlanOf(const std::string& text, const GridLimits& limits = {}) {
  Fused f = FuseForNvptx(text);
  EXPECT_EQ(f.specs.size(), 1u) << text;
  if (f.specs.size() != 1) return {};
  auto plan = PlanGridKernel(f.specs[0], limits);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : GridPlan{};
}

TEST(KernelPlanTest, LargeElementwiseFusionsGetAsManyElementsAsFitSixteenBytes) {
  GridPlan f32 = PlanOf(MultiplyAdd("1048576", "f32"));
  EXPECT_EQ(f32.kind, GridKind::kFlat);
  EXPECT_EQ(f32.vector_width, 4);
  EXPECT_EQ(f32.block, 256);
  EXPECT_EQ(f32.grid, 1024);  // 2^20 / 4 / 256
  EXPECT_EQ(PlanOf(MultiplyAdd("1024x1024", "f32")).vector_width, 4);  // any rank: the linear index
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "f64")).vector_width, 2);
  // 2-byte and 1-byte elements: capped at max_vector_width.
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "f16")).vector_width, 4);
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "i8")).vector_width, 4);
  GridLimits wide;
  wide.max_vector_width = 16;
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "f16"), wide).vector_width, 8);
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "i8"), wide).vector_width, 16);
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "complex<f32>")).vector_width, 2);
  // 16-byte elements fill a vector alone.
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "complex<f64>")).vector_width, 1);
}

TEST(KernelPlanTest, TheWidestElementReadOrWrittenBoundsTheWidth) {
  // An f32 result from f64 inputs: two f64 loads fill 16 bytes.
  GridPlan narrowing = PlanOf(R"(
func.func @main(%x: tensor<1048576xf64>) -> tensor<1048576xf32> {
  %0 = stablehlo.convert %x : (tensor<1048576xf64>) -> tensor<1048576xf32>
  %1 = stablehlo.negate %0 : tensor<1048576xf32>
  return %1 : tensor<1048576xf32>
})");
  EXPECT_EQ(narrowing.vector_width, 2);
  EXPECT_EQ(narrowing.grid, 2048);  // 2^20 / 2 / 256
  // A 0-d input (here an i64 start index) is read once, outside the
  // loops: it does not count.
  GridPlan scalar_i64 = PlanOf(R"(
func.func @main(%x: tensor<1048576xf32>, %i: tensor<i64>) -> tensor<524288xf32> {
  %0 = stablehlo.dynamic_slice %x, %i, sizes = [524288] : (tensor<1048576xf32>, tensor<i64>) -> tensor<524288xf32>
  %1 = stablehlo.negate %0 : tensor<524288xf32>
  return %1 : tensor<524288xf32>
})");
  EXPECT_EQ(scalar_i64.vector_width, 4);
  // A transposed input is read out of order, but the result is written in
  // order: still vectorized (the stores merge, the transposed loads not).
  GridPlan transposed = PlanOf(R"(
func.func @main(%x: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %1 = stablehlo.negate %0 : tensor<1024x1024xf32>
  return %1 : tensor<1024x1024xf32>
})");
  EXPECT_EQ(transposed.vector_width, 4);
}

TEST(KernelPlanTest, SmallLongAndReducingKernelsStayScalar) {
  // Below vector_min_items (2^14): a thread per element.
  GridPlan small = PlanOf(MultiplyAdd("1000", "f32"));
  EXPECT_EQ(small.vector_width, 1);
  EXPECT_EQ(small.grid, 4);
  EXPECT_EQ(PlanOf(MultiplyAdd("16383", "f32")).vector_width, 1);
  EXPECT_EQ(PlanOf(MultiplyAdd("16384", "f32")).vector_width, 4);
  // More ops than vector_max_ops: the unrolled body would be too long.
  GridLimits few_ops;
  few_ops.vector_max_ops = 1;
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "f32"), few_ops).vector_width, 1);
  // Buffers aligned only to their element, or a width limit of 1.
  GridLimits element_aligned;
  element_aligned.buffer_alignment = 1;
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "f32"), element_aligned).vector_width, 1);
  GridLimits no_vectors;
  no_vectors.max_vector_width = 1;
  EXPECT_EQ(PlanOf(MultiplyAdd("1048576", "f32"), no_vectors).vector_width, 1);
  // Reductions keep their combine order: never vectorized.
  GridPlan sum = PlanOf(RowSums(64, 65536));
  EXPECT_EQ(sum.kind, GridKind::kBlockReduce);
  EXPECT_EQ(sum.vector_width, 1);
  GridPlan rows = PlanOf(RowSums(65536, 8));
  EXPECT_EQ(rows.kind, GridKind::kThreadReduce);
  EXPECT_EQ(rows.vector_width, 1);
}

// Few outputs over long rows: each row's extent is cut into chunks of at
// least split_min_chunk elements so that about split_target_blocks blocks
// share the work; the chunks cover every reduced element exactly once.
TEST(KernelPlanTest, FewOutputsOverLongRowsAreSplit) {
  auto covers = [](const GridPlan& p) {
    return p.chunk * p.split >= p.extent && p.chunk * (p.split - 1) < p.extent;
  };
  GridPlan whole = PlanOf(RowSums(1, 16777216));
  EXPECT_EQ(whole.kind, GridKind::kBlockReduce);
  EXPECT_EQ(whole.split, 1024);
  EXPECT_EQ(whole.chunk, 16384);
  EXPECT_EQ(whole.grid, 1024);  // a block per (output, chunk)
  EXPECT_EQ(whole.combine_grid, 1);
  EXPECT_EQ(SplitPartials(whole), 1024);
  EXPECT_TRUE(covers(whole));
  // Three rows of 100,000: 342 chunks wanted per row, 12 of 8,192 fit.
  GridPlan three = PlanOf(RowSums(3, 100000));
  EXPECT_EQ(three.split, 12);
  EXPECT_EQ(three.chunk, 8334);
  EXPECT_EQ(three.grid, 36);
  EXPECT_EQ(three.combine_grid, 3);
  EXPECT_TRUE(covers(three));
  // Enough outputs to fill the GPU, or rows too short for two chunks: one kernel.
  for (const GridPlan& p : {PlanOf(RowSums(4096, 4096)), PlanOf(RowSums(7, 768)), PlanOf(RowSums(2, 16383))}) {
    EXPECT_EQ(p.kind, GridKind::kBlockReduce);
    EXPECT_EQ(p.split, 1);
    EXPECT_EQ(SplitPartials(p), 0);
  }
  EXPECT_EQ(PlanOf(RowSums(2, 16384)).split, 2);
  // The grid limit bounds the partials kernel's blocks (it strides), not the split.
  GridLimits few_blocks;
  few_blocks.max_blocks = 100;
  GridPlan strided = PlanOf(RowSums(1, 16777216), few_blocks);
  EXPECT_EQ(strided.split, 1024);
  EXPECT_EQ(strided.grid, 100);
  GridLimits never;
  never.split_min_chunk = 0;
  EXPECT_EQ(PlanOf(RowSums(1, 16777216), never).split, 1);
  // Thread reductions never split.
  EXPECT_EQ(PlanOf(RowSums(65536, 8)).split, 1);
}

TEST(KernelPlanTest, LimitsThatAreNotPowersOfTwoAreRefused) {
  Fused f = FuseForNvptx(MultiplyAdd("1048576", "f32"));
  ASSERT_EQ(f.specs.size(), 1u);
  GridLimits bad;
  bad.buffer_alignment = 12;
  auto plan = PlanGridKernel(f.specs[0], bad);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("buffer_alignment 12"), std::string::npos) << plan.status().message();
  bad = {};
  bad.max_vector_width = 0;
  plan = PlanGridKernel(f.specs[0], bad);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("max_vector_width 0"), std::string::npos) << plan.status().message();
}

// How often each element of a flat plan is computed when the kernel runs
// as launched: every thread of the grid walks the vector loop (groups of
// vector_width from vector_width * id, stepping vector_width * threads, up
// to FlatVectorEnd), then the tail loop (from FlatVectorEnd + id, stepping
// threads). These are the NVPTX emitter's loop bounds (EmitFlat).
std::vector<int> Coverage(const GridPlan& plan) {
  std::vector<int> hits(static_cast<size_t>(plan.work_items), 0);
  const int64_t threads = plan.grid * plan.block;
  const int64_t v = plan.vector_width;
  const int64_t vector_end = FlatVectorEnd(plan);
  for (int64_t id = 0; id < threads; ++id) {
    for (int64_t i = v * id; i < vector_end; i += v * threads) {
      for (int64_t k = 0; k < v; ++k) {
        // A group never reaches past the vector loop's end.
        EXPECT_LT(i + k, vector_end) << "thread " << id;
        if (i + k < plan.work_items) ++hits[static_cast<size_t>(i + k)];
      }
    }
    for (int64_t i = vector_end + id; i < plan.work_items; i += threads) ++hits[static_cast<size_t>(i)];
  }
  return hits;
}

TEST(KernelPlanTest, FlatLoopsComputeEveryElementExactlyOnce) {
  // Small limits so that sizes a test can walk need several grid strides
  // and leave every possible tail (work_items mod V).
  GridLimits limits;
  limits.block_threads = 32;
  limits.max_blocks = 3;
  limits.vector_min_items = 1;
  for (const char* type : {"f32", "f64", "f16"}) {
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 31, 32, 33, 127, 128, 129, 383, 384, 385, 1000, 1021, 4099}) {
      SCOPED_TRACE(std::string(type) + " x " + std::to_string(n));
      const GridPlan plan = PlanOf(MultiplyAdd(std::to_string(n), type), limits);
      ASSERT_EQ(plan.work_items, n);
      EXPECT_EQ(plan.vector_width, std::string(type) == "f64" ? 2 : 4);
      EXPECT_EQ(FlatVectorEnd(plan) % plan.vector_width, 0);
      EXPECT_LT(plan.work_items - FlatVectorEnd(plan), plan.vector_width);
      EXPECT_LE(plan.grid, limits.max_blocks);
      const std::vector<int> hits = Coverage(plan);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << "element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace jitd::codegen
