// Kernel plans (kernel_plan.h). Grid plans: the kFlat vector width chosen
// from a kernel's element types, size and op count, and the element
// coverage of the flat schedule's two loops, simulated from the plan
// exactly as the NVPTX emitter lays them out (no LLVM, no GPU). Cpu plans:
// each kind with its loop bounds, split and thread split, and the functions
// the cpu schedule emits from them.
#include "jit/codegen/kernel_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/codegen/cpu/cpu_kernel_emitter.h"
#include "jit/codegen/fusion.h"
#include "jit/codegen/nvptx/fuse_for_testing.h"
#include "jit/codegen/target_math.h"
#include "jit/frontend/parser.h"
#include "jit/passes/fusion.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

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

// ---- Cpu plans -------------------------------------------------------------------

// The only kernel of `text` fused for the cpu, with its module.
struct CpuKernel {
  std::unique_ptr<ir::Module> module;
  KernelSpec spec;
};

CpuKernel CpuSpecOf(const std::string& text) {
  CpuKernel k;
  auto parsed = frontend::ParseModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return k;
  k.module = std::move(parsed).value();
  EXPECT_TRUE(passes::FuseModule(*k.module, CpuFusionPolicy()).ok());
  int fusions = 0;
  for (const auto& op : k.module->EntryFunction()->entry()->ops()) {
    if (op->code() != ir::OpCode::kFusion) continue;
    ++fusions;
    std::optional<KernelSpec> spec = KernelSpecOfFusion(*op, HostTargetMath());
    EXPECT_TRUE(spec.has_value());
    if (spec) k.spec = *spec;
  }
  EXPECT_EQ(fusions, 1) << text;
  k.spec.name = "jitd_k0";
  return k;
}

CpuKernelPlan CpuPlanOf(const CpuKernel& k) {
  auto plan = PlanCpuKernel(k.spec);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : CpuKernelPlan{};
}

std::string Unary(const std::string& op, const std::string& in, const std::string& out, const std::string& attrs = "") {
  return "func.func @main(%x: " + in + ") -> " + out + " {\n  %0 = " + op + " %x" + attrs + " : (" + in + ") -> " + out +
         "\n  %1 = stablehlo.negate %0 : " + out + "\n  return %1 : " + out + "\n}";
}

TEST(CpuKernelPlanTest, ElementwiseKernelsAreFlatRowsOrTiles) {
  CpuKernel flat = CpuSpecOf(MultiplyAdd("1024x1024", "f32"));
  CpuKernelPlan p = CpuPlanOf(flat);
  EXPECT_EQ(p.kind, CpuKernelKind::kFlat);  // every access at the result's offset: any rank
  EXPECT_EQ(p.work_items, 1 << 20);
  EXPECT_EQ(p.bytes_per_item, 12);  // two f32 reads, one write
  EXPECT_EQ(p.min_chunk, kMinParallelBytes / 12);
  EXPECT_EQ(p.vector_bits, kCpuVectorBits);
  EXPECT_FALSE(p.stream_stores);  // 4 MiB written
  EXPECT_TRUE(CpuPlanOf(CpuSpecOf(MultiplyAdd("2048x1024", "f32"))).stream_stores);  // 8 MiB
  EXPECT_FALSE(CpuPlanOf(CpuSpecOf(MultiplyAdd("2048x1024", "complex<f32>"))).stream_stores);  // real types only

  // A slice reads away from the result's offset: a row per work item.
  CpuKernelPlan rows = CpuPlanOf(CpuSpecOf(
      Unary("stablehlo.slice", "tensor<64x100xf32>", "tensor<64x50xf32>", " [0:64, 0:100:2]")));
  EXPECT_EQ(rows.kind, CpuKernelKind::kRows);
  EXPECT_EQ(rows.rows, 64);
  EXPECT_EQ(rows.row_length, 50);
  EXPECT_EQ(rows.work_items, 64);
  EXPECT_EQ(rows.bytes_per_item, 8 * 50);

  // A transpose of the last dimension: tiles of 16 rows x 16 columns.
  CpuKernelPlan tiles = CpuPlanOf(CpuSpecOf(
      Unary("stablehlo.transpose", "tensor<100x40xf32>", "tensor<40x100xf32>", ", dims = [1, 0]")));
  EXPECT_EQ(tiles.kind, CpuKernelKind::kTiledTranspose);
  EXPECT_EQ(tiles.tile, 16);
  EXPECT_EQ(tiles.rows, 40);
  EXPECT_EQ(tiles.row_length, 100);
  EXPECT_EQ(tiles.work_items, 3);  // ceil(40 / 16)
  EXPECT_EQ(tiles.bytes_per_item, 8 * 100 * 16);
}

TEST(CpuKernelPlanTest, ReductionsKeepTheirOrderUnlessLongOrSplit) {
  CpuKernelPlan rows = CpuPlanOf(CpuSpecOf(RowSums(1000, 64)));
  EXPECT_EQ(rows.kind, CpuKernelKind::kReduce);
  EXPECT_EQ(rows.work_items, 1000);
  EXPECT_EQ(rows.extent, 64);
  EXPECT_EQ(rows.reduced_dims, std::vector<int64_t>{1});
  EXPECT_FALSE(rows.reassociates);  // shorter than kReassociateMinExtent: the interpreter's order
  EXPECT_EQ(rows.bytes_per_item, 8 * 64);
  CpuKernelPlan long_rows = CpuPlanOf(CpuSpecOf(RowSums(1000, 4096)));
  EXPECT_EQ(long_rows.kind, CpuKernelKind::kReduce);  // 1000 outputs: more than kSplitMaxOutputs
  EXPECT_TRUE(long_rows.reassociates);

  // A sum of 2^20 elements to one output: 32 chunks of 2^15, then a combine.
  CpuKernelPlan split = CpuPlanOf(CpuSpecOf(RowSums(1, 1 << 20)));
  EXPECT_EQ(split.kind, CpuKernelKind::kSplitReduce);
  EXPECT_EQ(split.split_chunks, 32);
  EXPECT_EQ(split.split_block, kSplitChunkElements);
  EXPECT_EQ(split.work_items, 32);  // (chunk, output) pairs
  EXPECT_EQ(split.combine_items, 1);
  EXPECT_EQ(split.partial_bytes, 32 * 4);
  EXPECT_TRUE(split.reassociates);
  EXPECT_EQ(split.min_chunk, std::max<int64_t>(1, kMinParallelBytes / split.bytes_per_item));
  EXPECT_EQ(split.combine_min_chunk, kMinParallelBytes / (32 * 4));
  // Too short to split twice over.
  EXPECT_EQ(CpuPlanOf(CpuSpecOf(RowSums(1, 2 * kSplitChunkElements - 1))).kind, CpuKernelKind::kReduce);
}

TEST(CpuKernelPlanTest, SpecsThePlannerCannotTakeAreRefused) {
  KernelSpec empty;
  empty.name = "nothing";
  auto plan = PlanCpuKernel(empty);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  CpuKernel k = CpuSpecOf(MultiplyAdd("16", "f32"));
  for (size_t i = 0; i <= kMaxKernelOps; ++i) k.spec.fused.push_back(k.spec.root);
  plan = PlanCpuKernel(k.spec);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("above the limit"), std::string::npos) << plan.status().message();
}

// The cpu schedule emits what the plan says: one function (and its body)
// per kernel, a second for a split reduction's combine, the streaming
// attribute for streaming stores.
TEST(CpuKernelPlanTest, TheScheduleEmitsThePlan) {
  struct Expect {
    std::string text;
    CpuKernelKind kind;
  };
  for (const Expect& e : std::vector<Expect>{
           {MultiplyAdd("2048x1024", "f32"), CpuKernelKind::kFlat},
           {Unary("stablehlo.slice", "tensor<64x100xf32>", "tensor<64x50xf32>", " [0:64, 0:100:2]"),
            CpuKernelKind::kRows},
           {Unary("stablehlo.transpose", "tensor<100x40xf32>", "tensor<40x100xf32>", ", dims = [1, 0]"),
            CpuKernelKind::kTiledTranspose},
           {RowSums(1000, 64), CpuKernelKind::kReduce},
           {RowSums(1, 1 << 20), CpuKernelKind::kSplitReduce}}) {
    CpuKernel k = CpuSpecOf(e.text);
    const CpuKernelPlan plan = CpuPlanOf(k);
    SCOPED_TRACE(std::string(CpuKernelKindName(plan.kind)));
    ASSERT_EQ(plan.kind, e.kind);
    llvm::LLVMContext context;
    llvm::Module module("plan", context);
    ASSERT_TRUE(EmitCpuKernel(module, k.spec, plan).ok());
    llvm::Function* fn = module.getFunction("jitd_k0");
    ASSERT_NE(fn, nullptr);
    EXPECT_EQ(fn->hasFnAttribute(kStreamStoresAttr), plan.stream_stores);
    EXPECT_EQ(fn->getFnAttribute("prefer-vector-width").getValueAsString(), std::to_string(plan.vector_bits));
    EXPECT_EQ(module.getFunction(CombineSymbol("jitd_k0")) != nullptr, plan.kind == CpuKernelKind::kSplitReduce);
  }
}

}  // namespace
}  // namespace jitd::codegen
