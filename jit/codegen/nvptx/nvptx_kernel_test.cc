// NVPTX kernels from jit/codegen: plans, PTX text (entries, address
// spaces, libdevice resolved, the reduction's fixed combine tree) and the
// target math's support predicates. Needs LLVM's NVPTX target and
// libdevice (skipped with a message where libdevice is absent); no GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "jit/codegen/fusion.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/nvptx/fuse_for_testing.h"
#include "jit/codegen/nvptx/grid_kernel_emitter.h"
#include "jit/codegen/nvptx/nvptx_backend.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "jit/codegen/target_math.h"
#include "jit/frontend/parser.h"
#include "jit/passes/fusion.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace jitd::codegen {
namespace {

// PTX for `specs` (named jitd_k0, jitd_k1, ...), or "" with a test failure.
std::string Ptx(std::vector<KernelSpec> specs, std::vector<GridPlan>* plans = nullptr,
                const GridLimits& limits = {}) {
  NvptxOptions options;
  auto machine = CreateNvptxTargetMachine(options);
  EXPECT_TRUE(machine.ok()) << machine.status().message();
  if (!machine.ok()) return "";
  llvm::LLVMContext context;
  llvm::Module module("test", context);
  PrepareNvptxModule(module, **machine);
  for (size_t i = 0; i < specs.size(); ++i) {
    specs[i].name = "jitd_k" + std::to_string(i);
    auto plan = PlanGridKernel(specs[i], limits);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    if (!plan.ok()) return "";
    if (plans) plans->push_back(*plan);
    Status s = EmitGridKernel(module, specs[i], *plan, limits);
    EXPECT_TRUE(s.ok()) << s.message();
    if (!s.ok()) return "";
  }
  auto ptx = CompileNvptxModule(module, **machine, options);
  EXPECT_TRUE(ptx.ok()) << ptx.status().message();
  if (!ptx.ok()) return "";
  if (std::getenv("JITD_TEST_PRINT_PTX")) std::fprintf(stderr, "%s\n", ptx->c_str());
  for (const llvm::Function& fn : module) {
    EXPECT_FALSE(fn.isDeclaration() && fn.getName().starts_with("__nv_")) << "unresolved " << fn.getName().str();
  }
  return *ptx;
}

bool HaveLibdevice() { return FindLibdevice({}).ok(); }

TEST(NvptxKernelTest, ElementwiseKernelIsAFlatGridStrideEntryOnGlobalMemory) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  Fused f = FuseForNvptx(R"(
func.func @main(%x: tensor<1000xf32>, %y: tensor<1000xf32>) -> tensor<1000xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<1000xf32>
  %1 = stablehlo.exponential %x : tensor<1000xf32>
  %2 = stablehlo.divide %0, %1 : tensor<1000xf32>
  return %2 : tensor<1000xf32>
})");
  ASSERT_EQ(f.specs.size(), 1u);
  std::vector<GridPlan> plans;
  const std::string ptx = Ptx(f.specs, &plans);
  ASSERT_FALSE(ptx.empty());
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].kind, GridKind::kFlat);
  EXPECT_EQ(plans[0].work_items, 1000);
  EXPECT_EQ(plans[0].block, 256);
  EXPECT_EQ(plans[0].grid, 4);  // ceil(1000 / 256)
  EXPECT_EQ(plans[0].shared_bytes, 0);
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
  EXPECT_NE(ptx.find(".visible .entry jitd_k0("), std::string::npos) << ptx;
  EXPECT_GE(Count(ptx, "ld.global"), 2u) << ptx;  // x and y
  EXPECT_GE(Count(ptx, "st.global"), 1u) << ptx;
  EXPECT_EQ(Count(ptx, "ld.param.u64"), 3u) << ptx;  // three buffers
  // libdevice's expf inlined: no call, no extern function left.
  EXPECT_EQ(ptx.find("__nv_"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find(".extern"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("call"), std::string::npos) << ptx;
  // IEEE division, no flush to zero.
  EXPECT_NE(ptx.find("div.rn.f32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find(".ftz"), std::string::npos) << ptx;
  // The grid-stride step: nctaid * ntid.
  EXPECT_NE(ptx.find("%nctaid.x"), std::string::npos) << ptx;
}

TEST(NvptxKernelTest, LongSumIsABlockReductionWithAFixedCombineTree) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  Fused f = FuseForNvptx(RowSums(4, 4096));
  ASSERT_EQ(f.specs.size(), 1u);
  std::vector<GridPlan> plans;
  const std::string ptx = Ptx(f.specs, &plans);
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(plans[0].kind, GridKind::kBlockReduce);
  EXPECT_EQ(plans[0].work_items, 4);
  EXPECT_EQ(plans[0].extent, 4096);
  EXPECT_EQ(plans[0].grid, 4);     // a block per output
  EXPECT_EQ(plans[0].block, 256);
  EXPECT_EQ(plans[0].shared_bytes, 64);  // 8 warps x 8 bytes
  EXPECT_NE(ptx.find(".shared"), std::string::npos) << ptx;
  EXPECT_GE(Count(ptx, "bar.sync"), 2u) << ptx;
  // Nothing whose order depends on timing: no atomics.
  EXPECT_EQ(ptx.find("atom."), std::string::npos) << ptx;
  // The tree: shuffles down by 16, 8, 4, 2, 1 within a warp (twice: the
  // threads' partials, then the warps'), one 32-bit shuffle each for f32.
  std::vector<int> deltas;
  for (size_t at = ptx.find("shfl.sync.down.b32"); at != std::string::npos;
       at = ptx.find("shfl.sync.down.b32", at + 1)) {
    const size_t line_end = ptx.find('\n', at);
    const std::string line = ptx.substr(at, line_end - at);
    // "shfl.sync.down.b32 %r, %r, DELTA, 31, -1;"
    const size_t third = line.find(',', line.find(',') + 1);
    deltas.push_back(std::stoi(line.substr(third + 1)));
  }
  const std::vector<int> tree = {16, 8, 4, 2, 1};
  ASSERT_EQ(deltas.size(), 2 * tree.size()) << ptx;
  for (size_t i = 0; i < deltas.size(); ++i) EXPECT_EQ(deltas[i], tree[i % tree.size()]) << i;
  // Emitting it again gives the same PTX.
  EXPECT_EQ(Ptx(f.specs), ptx);
}

TEST(NvptxKernelTest, LongF64MaximumShufflesBothHalvesOfEveryValue) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  Fused f = FuseForNvptx(R"(
func.func @main(%x: tensor<2048xf64>) -> tensor<f64> {
  %init = stablehlo.constant dense<0xFFF0000000000000> : tensor<f64>
  %0 = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [0] : (tensor<2048xf64>, tensor<f64>) -> tensor<f64>
  return %0 : tensor<f64>
})");
  ASSERT_EQ(f.specs.size(), 1u);
  std::vector<GridPlan> plans;
  const std::string ptx = Ptx(f.specs, &plans);
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(plans[0].kind, GridKind::kBlockReduce);
  EXPECT_EQ(plans[0].grid, 1);
  EXPECT_EQ(Count(ptx, "shfl.sync.down.b32"), 20u) << ptx;  // 2 folds x 5 steps x 2 halves
  EXPECT_EQ(ptx.find("atom."), std::string::npos) << ptx;
}

TEST(NvptxKernelTest, ShortAndMultiResultReductionsFoldInOrderOneThreadPerOutput) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  Fused f = FuseForNvptx(RowSums(3, 10));
  ASSERT_EQ(f.specs.size(), 1u);
  std::vector<GridPlan> plans;
  const std::string ptx = Ptx(f.specs, &plans);
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(plans[0].kind, GridKind::kThreadReduce);
  EXPECT_EQ(plans[0].work_items, 3);
  EXPECT_EQ(plans[0].block, 32);  // one warp for 3 outputs
  EXPECT_EQ(plans[0].grid, 1);
  EXPECT_EQ(ptx.find("shfl"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("bar.sync"), std::string::npos) << ptx;
}

TEST(NvptxKernelTest, NvptxComputesTheHostsSpecialAndComplexMathItself) {
  auto parsed = frontend::ParseModule(R"(
func.func @main(%x: tensor<4xcomplex<f32>>, %y: tensor<4xf32>, %z: tensor<4xf8E4M3FN>) -> (tensor<4xcomplex<f32>>, tensor<4xf32>, tensor<4xf32>, tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) {
  %0 = stablehlo.multiply %x, %x : tensor<4xcomplex<f32>>
  %1 = chlo.lgamma %y : tensor<4xf32> -> tensor<4xf32>
  %2 = stablehlo.convert %z : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
  %3 = stablehlo.add %x, %x : tensor<4xcomplex<f32>>
  %4 = stablehlo.cbrt %x : tensor<4xcomplex<f32>>
  return %0, %1, %2, %3, %4 : tensor<4xcomplex<f32>>, tensor<4xf32>, tensor<4xf32>, tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const auto& ops = (*parsed)->EntryFunction()->entry()->ops();
  const ir::Op& complex_multiply = *ops[0];
  const ir::Op& lgamma = *ops[1];
  const ir::Op& f8_convert = *ops[2];
  const ir::Op& complex_add = *ops[3];
  const ir::Op& complex_cbrt = *ops[4];
  EXPECT_TRUE(IsNvptxFusibleOp(complex_multiply));  // in double (nvptx_target_math.h)
  EXPECT_TRUE(IsNvptxFusibleOp(lgamma));            // libdevice's lgamma
  EXPECT_FALSE(IsNvptxFusibleOp(f8_convert));       // 8-bit floats need the host's tables
  EXPECT_FALSE(IsNvptxFusibleOp(complex_cbrt));     // no NVPTX code for it
  EXPECT_TRUE(IsNvptxFusibleOp(complex_add));
  EXPECT_TRUE(IsFusibleOp(lgamma, HostTargetMath()));
  EXPECT_TRUE(IsFusibleOp(f8_convert, HostTargetMath()));
  EXPECT_TRUE(IsFusibleOp(complex_cbrt, HostTargetMath()));
  EXPECT_EQ(IsFusibleOp(complex_multiply, HostTargetMath()), HostTargetMath().HasExtendedComplex());
  EXPECT_EQ(NvptxMath().MathFunction("exp", true), "__nv_expf");
  EXPECT_EQ(NvptxMath().MathFunction("atan2", false), "__nv_atan2");
  EXPECT_EQ(HostTargetMath().MathFunction("exp", true), "expf");
}

// Every function the nvptx target computes in place of the host's: one
// kernel each, assembled to PTX with libdevice resolved (Ptx checks that no
// __nv_ declaration is left) and no call of anything outside the module.
TEST(NvptxKernelTest, SpecialAndComplexFunctionsCompileWithoutHostCalls) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  const char* real_ops[] = {"chlo.lgamma", "chlo.digamma", "chlo.erf_inv", "chlo.bessel_i1e", "chlo.cosh",
                            "chlo.sinh"};
  const char* real_types[] = {"f32", "f64", "f16", "bf16"};
  const char* complex_ops[] = {"stablehlo.exponential", "stablehlo.exponential_minus_one", "stablehlo.log",
                               "stablehlo.log_plus_one", "stablehlo.logistic", "stablehlo.sqrt",
                               "stablehlo.rsqrt", "stablehlo.sine", "stablehlo.cosine", "stablehlo.tan",
                               "stablehlo.tanh", "stablehlo.sign", "chlo.acos", "chlo.acosh", "chlo.asin",
                               "chlo.asinh", "chlo.atan", "chlo.atanh", "chlo.cosh", "chlo.sinh"};
  std::vector<std::string> programs;
  for (const char* op : real_ops) {
    for (const char* t : real_types) {
      const std::string ty = std::string("tensor<8x") + t + ">";
      programs.push_back("func.func @main(%x: " + ty + ") -> " + ty + " {\n  %0 = " + op + " %x : " + ty +
                         " -> " + ty + "\n  return %0 : " + ty + "\n}");
    }
  }
  for (const char* op : complex_ops) {
    for (const char* t : {"f32", "f64"}) {
      const std::string ty = std::string("tensor<8xcomplex<") + t + ">>";
      const bool chlo = std::string(op).starts_with("chlo.");
      programs.push_back("func.func @main(%x: " + ty + ") -> " + ty + " {\n  %0 = " + op + " %x : " + ty +
                         (chlo ? " -> " + ty : std::string()) + "\n  return %0 : " + ty + "\n}");
    }
  }
  for (const char* op : {"stablehlo.multiply", "stablehlo.divide", "stablehlo.power"}) {
    for (const char* t : {"f32", "f64"}) {
      const std::string ty = std::string("tensor<8xcomplex<") + t + ">>";
      programs.push_back("func.func @main(%x: " + ty + ", %y: " + ty + ") -> " + ty + " {\n  %0 = " + op +
                         " %x, %y : " + ty + "\n  return %0 : " + ty + "\n}");
    }
  }
  for (const char* t : {"f32", "f64"}) {
    const std::string ty = std::string("tensor<8xcomplex<") + t + ">>";
    const std::string rt = std::string("tensor<8x") + t + ">";
    programs.push_back("func.func @main(%x: " + ty + ") -> " + rt + " {\n  %0 = stablehlo.abs %x : (" + ty +
                       ") -> " + rt + "\n  return %0 : " + rt + "\n}");
  }
  for (const std::string& program : programs) {
    SCOPED_TRACE(program);
    Fused f = FuseForNvptx(program);
    ASSERT_EQ(f.specs.size(), 1u);
    const std::string ptx = Ptx(f.specs);
    ASSERT_FALSE(ptx.empty());
    EXPECT_NE(ptx.find(".visible .entry jitd_k0("), std::string::npos);
    EXPECT_EQ(ptx.find(".extern"), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("jitd_eval_"), std::string::npos) << ptx;
  }
}

// The PTX lines (trimmed) of `ptx` that contain `what`.
std::vector<std::string> Lines(const std::string& ptx, const std::string& what) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < ptx.size()) {
    size_t end = ptx.find('\n', at);
    if (end == std::string::npos) end = ptx.size();
    std::string line = ptx.substr(at, end - at);
    if (line.find(what) != std::string::npos) {
      line.erase(0, line.find_first_not_of(" \t"));
      out.push_back(line);
    }
    at = end + 1;
  }
  return out;
}

TEST(NvptxKernelTest, LargeF32ElementwiseFusionUses128BitLoadsAndStores) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  Fused f = FuseForNvptx(MultiplyAdd(1 << 20, "f32"));
  ASSERT_EQ(f.specs.size(), 1u);
  std::vector<GridPlan> plans;
  const std::string ptx = Ptx(f.specs, &plans);
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(plans[0].vector_width, 4);
  EXPECT_EQ(plans[0].grid, 1024);  // 2^20 / 4 elements per thread / 256 threads
  // Both inputs read as one v4 each, the result written as one v4; no
  // element goes through a scalar access (2^20 is a multiple of 4: no tail).
  EXPECT_EQ(Lines(ptx, "ld.global.nc.v4.f32").size() + Lines(ptx, "ld.global.v4.f32").size(), 2u) << ptx;
  EXPECT_EQ(Lines(ptx, "st.global.v4.f32").size(), 1u) << ptx;
  EXPECT_EQ(Lines(ptx, "ld.global.f32").size() + Lines(ptx, "ld.global.nc.f32").size(), 0u) << ptx;
  EXPECT_EQ(Lines(ptx, "st.global.f32").size(), 0u) << ptx;
}

TEST(NvptxKernelTest, F64FusionUsesTwoWideAccessesAndATailLoopForTheRest) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  // 2^20 + 1 elements: one element past the vector loop.
  Fused f = FuseForNvptx(MultiplyAdd((1 << 20) + 1, "f64"));
  ASSERT_EQ(f.specs.size(), 1u);
  std::vector<GridPlan> plans;
  const std::string ptx = Ptx(f.specs, &plans);
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(plans[0].vector_width, 2);
  EXPECT_EQ(FlatVectorEnd(plans[0]), 1 << 20);
  EXPECT_EQ(Lines(ptx, "ld.global.nc.v2.f64").size() + Lines(ptx, "ld.global.v2.f64").size(), 2u) << ptx;
  EXPECT_EQ(Lines(ptx, "st.global.v2.f64").size(), 1u) << ptx;
  // The tail: scalar accesses, one load per input and one store.
  EXPECT_EQ(Lines(ptx, "ld.global.nc.f64").size() + Lines(ptx, "ld.global.f64").size(), 2u) << ptx;
  EXPECT_EQ(Lines(ptx, "st.global.f64").size(), 1u) << ptx;
}

// The LLVM IR of `spec`'s kernel as emitted, before any optimization.
std::string EmittedIr(KernelSpec spec) {
  auto machine = CreateNvptxTargetMachine({});
  EXPECT_TRUE(machine.ok()) << machine.status().message();
  if (!machine.ok()) return "";
  llvm::LLVMContext context;
  llvm::Module module("test", context);
  PrepareNvptxModule(module, **machine);
  spec.name = "jitd_k0";
  auto plan = PlanGridKernel(spec, {});
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return "";
  Status s = EmitGridKernel(module, spec, *plan, {});
  EXPECT_TRUE(s.ok()) << s.message();
  std::string ir;
  llvm::raw_string_ostream os(ir);
  module.print(os, nullptr);
  return os.str();
}

TEST(NvptxKernelTest, LongElementBodiesGetVectorAccessesFromTheEmitter) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  // tanh's element math is long and exp's branches: the neighbours'
  // accesses are too far apart or in other blocks for the backend to merge
  // them; the emitter writes the vector accesses itself.
  for (const char* op : {"tanh", "exponential"}) {
    SCOPED_TRACE(op);
    Fused f = FuseForNvptx(std::string(R"(
func.func @main(%x: tensor<1024x1024xf32>, %b: tensor<1024xf32>) -> tensor<1024x1024xf32> {
  %0 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<1024xf32>) -> tensor<1024x1024xf32>
  %1 = stablehlo.add %x, %0 : tensor<1024x1024xf32>
  %2 = stablehlo.)") + op + R"( %1 : tensor<1024x1024xf32>
  return %2 : tensor<1024x1024xf32>
})");
    ASSERT_EQ(f.specs.size(), 1u);
    const std::string ir = EmittedIr(f.specs[0]);
    // x; b is read along a row, element by element.
    const std::vector<std::string> loads = Lines(ir, "load <4 x float>");
    const std::vector<std::string> stores = Lines(ir, "store <4 x float>");
    ASSERT_EQ(loads.size(), 1u) << ir;
    ASSERT_EQ(stores.size(), 1u) << ir;
    EXPECT_NE(loads[0].find("align 16"), std::string::npos) << loads[0];
    EXPECT_NE(stores[0].find("align 16"), std::string::npos) << stores[0];
    std::vector<GridPlan> plans;
    const std::string ptx = Ptx(f.specs, &plans);
    ASSERT_FALSE(ptx.empty());
    EXPECT_EQ(plans[0].vector_width, 4);
    EXPECT_EQ(Lines(ptx, "ld.global.nc.v4.f32").size(), 1u) << ptx;
    EXPECT_EQ(Lines(ptx, "st.global.v4.f32").size(), 1u) << ptx;
    EXPECT_EQ(Lines(ptx, "st.global.f32").size(), 0u) << ptx;
    // The broadcast row vector: four scalar loads per group.
    EXPECT_EQ(Lines(ptx, "ld.global.nc.f32").size(), 4u) << ptx;
  }
}

TEST(NvptxKernelTest, ExtraOutputsAreWrittenAsVectorsToo) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  Fused f = FuseForNvptx(R"(
func.func @main(%x: tensor<1048576xf32>, %y: tensor<1048576xf64>) -> (tensor<1048576xf32>, tensor<1048576xf64>) {
  %0 = stablehlo.convert %x : (tensor<1048576xf32>) -> tensor<1048576xf64>
  %1 = stablehlo.add %0, %y : tensor<1048576xf64>
  %2 = stablehlo.exponential %1 : tensor<1048576xf64>
  %3 = stablehlo.convert %2 : (tensor<1048576xf64>) -> tensor<1048576xf32>
  return %3, %1 : tensor<1048576xf32>, tensor<1048576xf64>
})");
  ASSERT_EQ(f.specs.size(), 1u);
  ASSERT_EQ(f.specs[0].extra_outputs.size(), 1u);
  std::vector<GridPlan> plans;
  const std::string ptx = Ptx(f.specs, &plans);
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(plans[0].vector_width, 2);  // f64: two per 16 bytes
  EXPECT_EQ(Lines(ptx, "ld.global.nc.v2.f32").size(), 1u) << ptx;
  EXPECT_EQ(Lines(ptx, "ld.global.nc.v2.f64").size(), 1u) << ptx;
  EXPECT_EQ(Lines(ptx, "st.global.v2.f32").size(), 1u) << ptx;  // the root's result
  EXPECT_EQ(Lines(ptx, "st.global.v2.f64").size(), 1u) << ptx;  // the extra output
}

TEST(NvptxKernelTest, SmallOddAndUnalignedKernelsKeepAThreadPerElement) {
  if (!HaveLibdevice()) GTEST_SKIP() << FindLibdevice({}).status().message();
  // Below vector_min_items.
  Fused small = FuseForNvptx(MultiplyAdd(1000, "f32"));
  ASSERT_EQ(small.specs.size(), 1u);
  std::vector<GridPlan> plans;
  std::string ptx = Ptx(small.specs, &plans);
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(plans[0].vector_width, 1);
  EXPECT_EQ(Count(ptx, ".v4."), 0u) << ptx;
  EXPECT_EQ(Count(ptx, ".v2."), 0u) << ptx;
  // Buffers the caller only aligns to their element: no vectors, no align.
  Fused large = FuseForNvptx(MultiplyAdd(1 << 20, "f32"));
  ASSERT_EQ(large.specs.size(), 1u);
  GridLimits element_aligned;
  element_aligned.buffer_alignment = 1;
  plans.clear();
  ptx = Ptx(large.specs, &plans, element_aligned);
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(plans[0].vector_width, 1);
  EXPECT_EQ(plans[0].grid, 4096);
  EXPECT_EQ(Count(ptx, ".v4."), 0u) << ptx;
}

TEST(NvptxKernelTest, EmitterRefusesAVectorWidthThePlanCannotHave) {
  Fused f = FuseForNvptx(RowSums(4, 4096));
  ASSERT_EQ(f.specs.size(), 1u);
  auto plan = PlanGridKernel(f.specs[0], {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->vector_width, 1);  // reductions keep their combine order
  llvm::LLVMContext context;
  llvm::Module module("test", context);
  GridPlan bad = *plan;
  bad.vector_width = 4;
  Status s = EmitGridKernel(module, f.specs[0], bad, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("vector width 4"), std::string::npos) << s.message();
  EXPECT_TRUE(module.empty());
}

TEST(NvptxKernelTest, PlansRejectLimitsThatCannotHoldABlock) {
  Fused f = FuseForNvptx(R"(
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.negate %x : tensor<8xf32>
  return %0 : tensor<8xf32>
})");
  ASSERT_EQ(f.specs.size(), 1u);
  GridLimits bad;
  bad.block_threads = 100;  // not a multiple of 32
  auto plan = PlanGridKernel(f.specs[0], bad);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("block_threads 100"), std::string::npos) << plan.status().message();
  GridLimits small;
  small.max_blocks = 2;
  auto capped = PlanGridKernel(f.specs[0], small);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->grid, 1);  // 8 elements: one block
}

TEST(NvptxKernelTest, TargetMachineNamesWhatItKnows) {
  const NvptxTargetInfo& info = NvptxInfo();
  EXPECT_GE(info.max_ptx_version, 78);  // LLVM 19: 8.5
  NvptxOptions options;
  options.sm = "sm_999";
  auto machine = CreateNvptxTargetMachine(options);
  ASSERT_FALSE(machine.ok());
  EXPECT_NE(machine.status().message().find("sm_999"), std::string::npos);
  EXPECT_NE(machine.status().message().find("sm_90"), std::string::npos);  // the list of known ones
  options.sm = "sm_90";
  options.ptx_version = 60;  // sm_90 needs 7.8
  machine = CreateNvptxTargetMachine(options);
  ASSERT_FALSE(machine.ok());
  EXPECT_NE(machine.status().message().find("needs PTX ISA 7.8"), std::string::npos) << machine.status().message();
}

}  // namespace
}  // namespace jitd::codegen
