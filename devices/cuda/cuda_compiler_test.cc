// The cuda compiler offline: CudaProgram steps, buffers and cubins; ops it
// cannot lower refused by name; the PTX assemblers (nvJitLink, ptxas) and
// the PTX version choice. No GPU or driver needed; the cases that assemble
// are skipped with a message where no assembler is found.
#include "devices/cuda/cuda_compiler.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "devices/cuda/ptx_compiler.h"
#include "jit/codegen/nvptx/nvptx_backend.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::devices::cuda {
namespace {

using frontend::testing::ParseOrFail;

// `text` parsed and compiled with `options`. Text that does not parse fails
// the test, and its parse error is returned.
StatusOr<CudaProgram> CompileText(const std::string& text, const CudaCompileOptions& options) {
  auto parsed = frontend::ParseModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return parsed.status();
  return CompileCuda(**parsed, options);
}

bool IsElf(const std::string& bytes) { return bytes.size() > 4 && bytes.compare(0, 4, "\x7f" "ELF") == 0; }

// A shared assembler, or null (the test is then skipped).
const PtxCompiler* Assembler(const std::string& which = "auto") {
  static auto* compilers = new std::map<std::string, std::unique_ptr<PtxCompiler>>();
  auto it = compilers->find(which);
  if (it == compilers->end()) {
    PtxCompilerOptions options;
    options.assembler = which;
    auto created = PtxCompiler::Create(options);
    it = compilers->emplace(which, created.ok() ? std::move(created).value() : nullptr).first;
  }
  return it->second.get();
}

constexpr char kProgram[] = R"(
func.func @main(%x: tensor<64x300xf32>, %y: tensor<64x300xf32>) -> (tensor<64xf32>, tensor<64x300xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %scale = stablehlo.constant dense<[[0.5]]> : tensor<1x1xf32>
  %s = stablehlo.broadcast_in_dim %scale, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<64x300xf32>
  %0 = stablehlo.multiply %x, %s : tensor<64x300xf32>
  %1 = stablehlo.add %0, %y : tensor<64x300xf32>
  %2 = stablehlo.reduce(%1 init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<64x300xf32>, tensor<f32>) -> tensor<64xf32>
  %3 = stablehlo.exponential %1 : tensor<64x300xf32>
  return %2, %3 : tensor<64xf32>, tensor<64x300xf32>
})";

TEST(CudaCompilerTest, ProgramHasLaunchesBuffersAndACubin) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  options.pipeline = "inline,cse,dce";
  auto program = CompileText(kProgram, options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  EXPECT_EQ(program->sm, "sm_90");
  EXPECT_TRUE(IsElf(program->cubin));
  EXPECT_NE(program->ptx.find(".visible .entry"), std::string::npos);
  ASSERT_EQ(program->argument_types.size(), 2u);
  ASSERT_EQ(program->results.size(), 2u);
  ASSERT_GE(program->steps.size(), 1u);
  // Every launch names an entry of the PTX, and its buffers exist.
  for (const CudaStep& step : program->steps) {
    EXPECT_NE(program->ptx.find(".entry " + step.launch.function + "("), std::string::npos) << step.launch.function;
    EXPECT_GE(step.launch.block[0], 32u);
    EXPECT_GE(step.launch.grid[0], 1u);
    for (int32_t b : step.launch.buffers) {
      ASSERT_GE(b, 0);
      ASSERT_LT(static_cast<size_t>(b), program->buffers.size());
    }
  }
  // Arguments 0 and 1 are buffers of kind argument; the results are
  // temporaries inside the arena, apart from each other.
  int arguments = 0;
  for (const CudaBuffer& b : program->buffers) arguments += b.kind == CudaBuffer::Kind::kArgument;
  EXPECT_EQ(arguments, 2);
  const CudaBuffer& r0 = program->buffers[static_cast<size_t>(program->results[0])];
  const CudaBuffer& r1 = program->buffers[static_cast<size_t>(program->results[1])];
  EXPECT_EQ(r0.kind, CudaBuffer::Kind::kTemporary);
  EXPECT_EQ(r0.bytes, 64 * 4);
  EXPECT_EQ(r1.bytes, 64 * 300 * 4);
  EXPECT_TRUE(r0.offset + r0.bytes <= r1.offset || r1.offset + r1.bytes <= r0.offset);
  EXPECT_LE(r0.offset + r0.bytes, program->arena_bytes);
  EXPECT_LE(r1.offset + r1.bytes, program->arena_bytes);
  EXPECT_EQ(r0.offset % 256, 0);
  EXPECT_NE(DescribeCudaProgram(*program).find("0 library calls"), std::string::npos);
}

TEST(CudaCompilerTest, LargeElementwiseKernelsLaunchAThreadPerVector) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const std::string text = R"(
func.func @main(%x: tensor<1024x1024xf32>, %y: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<1024x1024xf32>
  %1 = stablehlo.add %0, %x : tensor<1024x1024xf32>
  return %1 : tensor<1024x1024xf32>
})";
  CudaCompileOptions options;
  options.assemble = false;
  auto program = CompileText(text, options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 1u);
  // 2^20 elements, 4 per thread, 256 threads per block.
  EXPECT_EQ(program->steps[0].launch.grid[0], 1024u);
  EXPECT_EQ(program->steps[0].launch.block[0], 256u);
  EXPECT_NE(DescribeCudaProgram(*program).find("flat 1048576 elements, 4 per thread: add multiply"),
            std::string::npos)
      << DescribeCudaProgram(*program);
  EXPECT_NE(program->ptx.find("ld.global.nc.v4.f32"), std::string::npos) << program->ptx;
  EXPECT_NE(program->ptx.find("st.global.v4.f32"), std::string::npos) << program->ptx;
  // The vector width is part of what a compile's output depends on.
  CudaCompileOptions scalar = options;
  scalar.limits.max_vector_width = 1;
  EXPECT_NE(CudaCompileFingerprint(options), CudaCompileFingerprint(scalar));
  program = CompileText(text, scalar);
  ASSERT_TRUE(program.ok()) << program.status().message();
  EXPECT_EQ(program->steps[0].launch.grid[0], 4096u);
  EXPECT_EQ(program->ptx.find(".v4."), std::string::npos) << program->ptx;
}

// A sum of a whole tensor to a scalar is two launches: partial sums of
// 16,384-element chunks into a scratch from 1,024 blocks, then one block
// folding those and the init (kernel_plan.h), not one block reading it all.
TEST(CudaCompilerTest, AFullReductionIsSplitIntoPartialsAndACombine) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const std::string text = R"(
func.func @main(%x: tensor<16777216xf32>, %init: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [0] : (tensor<16777216xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
})";
  CudaCompileOptions options;
  options.assemble = false;
  auto program = CompileText(text, options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 2u) << DescribeCudaProgram(*program);
  const CudaKernelLaunch& partials = program->steps[0].launch;
  const CudaKernelLaunch& combine = program->steps[1].launch;
  EXPECT_EQ(partials.function, "jitd_k0");
  EXPECT_EQ(combine.function, "jitd_k0_combine");
  EXPECT_EQ(partials.grid[0], 1024u);
  EXPECT_EQ(combine.grid[0], 1u);
  // Partials: the input, the init (an argument), the scratch; the combine
  // reads the same two and the scratch, and writes the result.
  ASSERT_EQ(partials.buffers.size(), 3u);
  ASSERT_EQ(combine.buffers.size(), 4u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(combine.buffers[i], partials.buffers[i]) << i;
  const CudaBuffer& scratch = program->buffers[static_cast<size_t>(partials.buffers[2])];
  EXPECT_EQ(scratch.kind, CudaBuffer::Kind::kTemporary);
  EXPECT_EQ(scratch.bytes, 1024 * 4);
  EXPECT_NE(combine.buffers[3], partials.buffers[2]);
  EXPECT_EQ(program->launches, 2);
  for (const char* entry : {".entry jitd_k0(", ".entry jitd_k0_combine("}) {
    EXPECT_NE(program->ptx.find(entry), std::string::npos) << entry;
  }
  EXPECT_EQ(program->ptx.find("atom."), std::string::npos);  // a fixed order, no atomics
  EXPECT_NE(DescribeCudaProgram(*program).find("split 1024 ways"), std::string::npos)
      << DescribeCudaProgram(*program);
  // The split is part of what a compile's output depends on.
  CudaCompileOptions unsplit = options;
  unsplit.limits.split_min_chunk = 0;
  EXPECT_NE(CudaCompileFingerprint(options), CudaCompileFingerprint(unsplit));
  program = CompileText(text, unsplit);
  ASSERT_TRUE(program.ok()) << program.status().message();
  EXPECT_EQ(program->steps.size(), 1u);
}

TEST(CudaCompilerTest, OpsWithoutALoweringAreRefusedByName) {
  CudaCompileOptions options;
  options.assemble = false;
  auto program = CompileText(R"(
func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = stablehlo.custom_call @my_op(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
})", options);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(program.status().message().find("'stablehlo.custom_call'"), std::string::npos) << program.status().message();
  EXPECT_NE(program.status().message().find("at 3:"), std::string::npos) << program.status().message();

  // Element math NVPTX lacks (complex cbrt) inside an otherwise fusible
  // chain names that op.
  options.pipeline = "inline";
  program = CompileText(R"(
func.func @main(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  %0 = stablehlo.add %x, %x : tensor<8xcomplex<f32>>
  %1 = stablehlo.cbrt %0 : tensor<8xcomplex<f32>>
  return %1 : tensor<8xcomplex<f32>>
})", options);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(program.status().message().find("'stablehlo.cbrt'"), std::string::npos) << program.status().message();
}

// stablehlo.while: copies in, cond kernels, a jump-unless on the pred,
// body kernels, copies back (swapped loop values through a snapshot), a
// jump back; the jumps serialize and bad ones fail validation.
TEST(CudaCompilerTest, WhileBecomesHostJumpsAroundItsRegionsKernels) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  CudaCompileOptions options;
  options.assemble = false;
  auto program = CompileText(R"(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %n: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:3 = stablehlo.while(%i = %zero, %x = %a, %y = %b) : tensor<i32>, tensor<4xf32>, tensor<4xf32>
    cond {
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %next = stablehlo.add %i, %one : tensor<i32>
      %sum = stablehlo.add %x, %b : tensor<4xf32>
      stablehlo.return %next, %y, %sum : tensor<i32>, tensor<4xf32>, tensor<4xf32>
    }
  return %r#1, %r#2 : tensor<4xf32>, tensor<4xf32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  const std::vector<CudaStep>& steps = program->steps;
  size_t test = steps.size(), back = steps.size();
  for (size_t s = 0; s < steps.size(); ++s) {
    if (steps[s].kind == CudaStep::Kind::kJumpUnless) test = s;
    if (steps[s].kind == CudaStep::Kind::kJump) back = s;
  }
  ASSERT_LT(test, steps.size());
  ASSERT_EQ(back, steps.size() - 1);  // the loop is the program's last part
  EXPECT_EQ(static_cast<size_t>(steps[test].target), steps.size());  // exit: the end
  EXPECT_EQ(program->buffers[static_cast<size_t>(steps[test].predicate)].bytes, 1);
  // Three copies in; the cond's compare right before the test, where the jump back goes.
  EXPECT_EQ(static_cast<size_t>(steps[back].target), test - 1);
  EXPECT_EQ(steps[test - 1].launch.buffers.back(), steps[test].predicate);
  size_t copies_in = 0;
  for (size_t s = 0; s + 1 < test; ++s) copies_in += steps[s].launch.function.starts_with("jitd_copy");
  EXPECT_EQ(copies_in, 3u);
  // %y returned in %x's place: a snapshot copy before the copies back.
  size_t snapshots = 0;
  for (const CudaStep& s : steps) snapshots += s.description.find("snapshot") != std::string::npos;
  EXPECT_EQ(snapshots, 1u);
  // The loop buffers: results 0 and 1 are the loop's x and y (distinct, in the arena).
  EXPECT_NE(program->results[0], program->results[1]);
  // %b is read in every iteration: its buffer (an argument) and the loop
  // buffers never share arena bytes with the body's temporaries.
  ASSERT_TRUE(ValidateCudaProgram(*program).ok());
  auto back_program = DeserializeCudaProgram(SerializeCudaProgram(*program));
  ASSERT_TRUE(back_program.ok()) << back_program.status().message();
  for (size_t s = 0; s < steps.size(); ++s) {
    EXPECT_EQ(back_program->steps[s].kind, steps[s].kind);
    EXPECT_EQ(back_program->steps[s].target, steps[s].target);
    EXPECT_EQ(back_program->steps[s].predicate, steps[s].predicate);
  }
  CudaProgram broken = *program;
  broken.steps[test].target = static_cast<int32_t>(steps.size() + 1);
  EXPECT_NE(ValidateCudaProgram(broken).message().find("jumps to step"), std::string::npos);
  broken = *program;
  broken.steps[test].predicate = broken.steps[0].launch.buffers[0];  // 4 bytes, not a pred
  EXPECT_NE(ValidateCudaProgram(broken).message().find("not a 1-byte buffer"), std::string::npos);
}

TEST(CudaCompilerTest, EqualKernelsAreEmittedOnce) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  CudaCompileOptions options;
  options.assemble = false;
  auto program = CompileText(R"(
func.func @main(%x: tensor<100xf32>) -> tensor<100xf32> {
  %0 = stablehlo.sine %x : tensor<100xf32>
  %1 = stablehlo.sort(%0) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %za = stablehlo.complex %a, %a : tensor<complex<f32>>
    %cb = stablehlo.cbrt %za : tensor<complex<f32>>
    %la = stablehlo.real %cb : (tensor<complex<f32>>) -> tensor<f32>
    %c = stablehlo.compare LT, %la, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64} : (tensor<100xf32>) -> tensor<100xf32>
  return %1 : tensor<100xf32>
})", options);
  ASSERT_FALSE(program.ok());  // a comparator calling the host's complex cbrt
  EXPECT_NE(program.status().message().find("'stablehlo.sort'"), std::string::npos) << program.status().message();

  program = CompileText(R"(
func.func @main(%x: tensor<100xf32>, %y: tensor<100xf32>) -> (tensor<100xf32>, tensor<100xf32>) {
  %0 = stablehlo.sine %x : tensor<100xf32>
  %1 = stablehlo.custom_call @foo(%0) {has_side_effect = true} : (tensor<100xf32>) -> tensor<100xf32>
  %2 = stablehlo.sine %y : tensor<100xf32>
  return %0, %2 : tensor<100xf32>, tensor<100xf32>
})", options);
  ASSERT_FALSE(program.ok());
  EXPECT_NE(program.status().message().find("'stablehlo.custom_call'"), std::string::npos);

  options.pipeline = "inline";
  program = CompileText(R"(
func.func @main(%x: tensor<100xf32>, %y: tensor<100xf32>) -> (tensor<100xf32>, tensor<100xf32>) {
  %0 = stablehlo.sine %x : tensor<100xf32>
  %1 = stablehlo.sine %y : tensor<100xf32>
  return %0, %1 : tensor<100xf32>, tensor<100xf32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  EXPECT_EQ(program->steps.size(), 2u);
  EXPECT_EQ(program->unique_kernels, 1);
  EXPECT_EQ(program->steps[0].launch.function, program->steps[1].launch.function);
  EXPECT_TRUE(program->cubin.empty());  // assemble = false
}

TEST(CudaCompilerTest, ScatterCopiesItsOperandThenAppliesUpdatesOnOneThread) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  options.pipeline = "";
  auto program = CompileText(R"(
func.func @main(%x: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<3x4xf32> {
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  if (std::getenv("JITD_TEST_PRINT_PTX")) std::fprintf(stderr, "%s\n", program->ptx.c_str());
  ASSERT_EQ(program->steps.size(), 2u) << DescribeCudaProgram(*program);
  const CudaKernelLaunch& copy = program->steps[0].launch;
  const CudaKernelLaunch& scatter = program->steps[1].launch;
  EXPECT_EQ(copy.function, "jitd_copy0");
  EXPECT_EQ(scatter.function, "jitd_scatter0");
  ASSERT_EQ(copy.buffers.size(), 2u);
  EXPECT_EQ(program->buffers[static_cast<size_t>(copy.buffers[0])].kind, CudaBuffer::Kind::kArgument);
  // The scatter updates the copy in place: result, indices, updates.
  ASSERT_EQ(scatter.buffers.size(), 3u);
  EXPECT_EQ(scatter.buffers[0], copy.buffers[1]);
  EXPECT_EQ(program->buffers[static_cast<size_t>(scatter.buffers[1])].index, 1);  // argument %i
  EXPECT_EQ(program->buffers[static_cast<size_t>(scatter.buffers[2])].index, 2);  // argument %u
  EXPECT_EQ(program->results[0], scatter.buffers[0]);
  EXPECT_EQ(scatter.grid[0] * scatter.block[0], 1u);  // one thread: updates in order
  EXPECT_EQ(copy.block[0], 256u);
  EXPECT_TRUE(IsElf(program->cubin));
  EXPECT_NE(program->ptx.find(".entry jitd_scatter0("), std::string::npos);
  EXPECT_NE(DescribeCudaProgram(*program).find("serial scatter of 8 update elements"), std::string::npos)
      << DescribeCudaProgram(*program);
  EXPECT_EQ(program->ptx.find("atom."), std::string::npos);
  // 12 floats copied as 8-byte words.
  EXPECT_NE(program->ptx.find("ld.global.nc.u64"), std::string::npos) << program->ptx;
}

TEST(CudaCompilerTest, ReduceWindowIsAThreadPerOutputFoldingItsPaddedWindow) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  options.pipeline = "";
  auto program = CompileText(R"(
func.func @main(%x: tensor<8x9xf32>, %init: tensor<f32>) -> tensor<8x9xf32> {
  %0 = "stablehlo.reduce_window"(%x, %init) <{padding = dense<[[0, 7], [1, 1]]> : tensor<2x2xi64>, window_dimensions = array<i64: 8, 3>, base_dilations = array<i64: 1, 2>, window_strides = array<i64: 1, 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<8x9xf32>, tensor<f32>) -> tensor<8x9xf32>
  return %0 : tensor<8x9xf32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 1u);
  const CudaKernelLaunch& launch = program->steps[0].launch;
  EXPECT_EQ(launch.function, "jitd_window0");
  ASSERT_EQ(launch.buffers.size(), 3u);  // input, init, result
  EXPECT_EQ(launch.grid[0], 1u);         // 72 outputs: one block
  EXPECT_EQ(launch.block[0], 256u);
  EXPECT_NE(program->steps[0].description.find("72 outputs x 24 window elements"), std::string::npos)
      << program->steps[0].description;
  EXPECT_TRUE(IsElf(program->cubin));

  // A body with element math NVPTX lacks (complex cbrt) is refused by name.
  options.assemble = false;
  program = CompileText(R"(
func.func @main(%x: tensor<4xf32>, %init: tensor<f32>) -> tensor<2xcomplex<f32>> {
  %c = stablehlo.complex %x, %x : tensor<4xcomplex<f32>>
  %ci = stablehlo.complex %init, %init : tensor<complex<f32>>
  %0 = "stablehlo.reduce_window"(%c, %ci) <{window_dimensions = array<i64: 2>, window_strides = array<i64: 2>}> ({
  ^bb0(%a: tensor<complex<f32>>, %b: tensor<complex<f32>>):
    %s = stablehlo.add %a, %b : tensor<complex<f32>>
    %m = stablehlo.cbrt %s : tensor<complex<f32>>
    stablehlo.return %m : tensor<complex<f32>>
  }) : (tensor<4xcomplex<f32>>, tensor<complex<f32>>) -> tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
})", options);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(program.status().message().find("'stablehlo.reduce_window'"), std::string::npos)
      << program.status().message();
}

TEST(CudaCompilerTest, GatherIsAThreadPerResultElementWithClampedStarts) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  options.pipeline = "";
  auto program = CompileText(R"(
func.func @main(%x: tensor<3x4xf32>, %i: tensor<2x1xi32>) -> tensor<2x4xf32> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 1u);
  EXPECT_EQ(program->steps[0].launch.function, "jitd_gather0");
  EXPECT_EQ(program->steps[0].launch.buffers.size(), 3u);
  EXPECT_NE(program->steps[0].description.find("gather 8 elements"), std::string::npos);
  EXPECT_TRUE(IsElf(program->cubin));
  // The start index clamped into [0, 3 - 1]: a max with 0 and a min with 2.
  EXPECT_NE(program->ptx.find("max.s"), std::string::npos) << program->ptx;
  EXPECT_NE(program->ptx.find("min.s"), std::string::npos) << program->ptx;
}

TEST(CudaCompilerTest, SortCopiesItsOperandsThenSortsEachRowOnOneThread) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  options.pipeline = "";
  auto program = CompileText(R"(
func.func @main(%k: tensor<5x7xf32>, %v: tensor<5x7xi32>) -> (tensor<5x7xf32>, tensor<5x7xi32>) {
  %0:2 = "stablehlo.sort"(%k, %v) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<5x7xf32>, tensor<5x7xi32>) -> (tensor<5x7xf32>, tensor<5x7xi32>)
  return %0#0, %0#1 : tensor<5x7xf32>, tensor<5x7xi32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 3u) << DescribeCudaProgram(*program);
  EXPECT_EQ(program->steps[0].launch.function, "jitd_copy0");  // both operands are 140 bytes: one kernel
  EXPECT_EQ(program->steps[1].launch.function, "jitd_copy0");
  const CudaKernelLaunch& sort = program->steps[2].launch;
  EXPECT_EQ(sort.function, "jitd_sort0");
  ASSERT_EQ(sort.buffers.size(), 2u);
  EXPECT_EQ(sort.buffers[0], program->steps[0].launch.buffers[1]);
  EXPECT_EQ(sort.buffers[1], program->steps[1].launch.buffers[1]);
  EXPECT_EQ(program->results[0], sort.buffers[0]);
  EXPECT_EQ(program->results[1], sort.buffers[1]);
  EXPECT_EQ(sort.grid[0], 1u);
  EXPECT_EQ(sort.block[0], 32u);  // 5 rows: one warp
  EXPECT_NE(program->steps[2].description.find("5 rows x 7"), std::string::npos) << program->steps[2].description;
  EXPECT_EQ(program->unique_kernels, 2);
  EXPECT_TRUE(IsElf(program->cubin));
}

TEST(CudaCompilerTest, DotGeneralIsAThreadPerOutputInTheInterpretersDomain) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  options.pipeline = "";
  auto program = CompileText(R"(
func.func @main(%a: tensor<3x4x8xf32>, %b: tensor<3x8x5xf32>, %c: tensor<4x6xi8>, %d: tensor<6x2xi8>) -> (tensor<3x4x5xf32>, tensor<4x2xi32>) {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x4x8xf32>, tensor<3x8x5xf32>) -> tensor<3x4x5xf32>
  %1 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<4x6xi8>, tensor<6x2xi8>) -> tensor<4x2xi32>
  return %0, %1 : tensor<3x4x5xf32>, tensor<4x2xi32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 2u);
  EXPECT_NE(program->steps[0].description.find("exact dot 60 outputs x 8"), std::string::npos)
      << program->steps[0].description;
  EXPECT_NE(program->steps[1].description.find("exact dot 8 outputs x 6"), std::string::npos)
      << program->steps[1].description;
  EXPECT_TRUE(IsElf(program->cubin));
  // Multiply and add rounded separately, as jit/eval: no fma.
  EXPECT_NE(program->ptx.find("mul.rn.f32"), std::string::npos) << program->ptx;
  EXPECT_NE(program->ptx.find("add.rn.f32"), std::string::npos) << program->ptx;
  EXPECT_EQ(program->ptx.find("fma."), std::string::npos) << program->ptx;
}

TEST(CudaCompilerTest, SelectAndScatterIsOneThreadInTheInterpretersOrder) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  options.pipeline = "";
  auto program = CompileText(R"(
func.func @main(%x: tensor<4x6xf32>, %s: tensor<2x3xf32>, %init: tensor<f32>) -> tensor<4x6xf32> {
  %0 = "stablehlo.select_and_scatter"(%x, %s, %init) <{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = stablehlo.compare GE, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %sum = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %sum : tensor<f32>
  }) : (tensor<4x6xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 1u);
  const CudaKernelLaunch& launch = program->steps[0].launch;
  EXPECT_EQ(launch.function, "jitd_select_scatter0");
  EXPECT_EQ(launch.buffers.size(), 4u);  // operand, source, init, result
  EXPECT_EQ(launch.grid[0] * launch.block[0], 1u);
  EXPECT_NE(program->steps[0].description.find("6 source elements x 4"), std::string::npos)
      << program->steps[0].description;
  EXPECT_TRUE(IsElf(program->cubin));
}

// fft over one axis: one kernel, a thread per result element, assembled
// with libdevice's sinpi / cospi resolved; two axes are refused by name.
TEST(CudaCompilerTest, FftOverOneAxisIsAThreadPerResultElement) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  const char* programs[] = {
      "%r = stablehlo.fft %a, type = RFFT, length = [17] : (tensor<3x17xf32>) -> tensor<3x9xcomplex<f32>>\n"
      "  return %r : tensor<3x9xcomplex<f32>>",
      "%r = stablehlo.fft %a, type = IRFFT, length = [33] : (tensor<3x17xcomplex<f64>>) -> tensor<3x33xf64>\n"
      "  return %r : tensor<3x33xf64>",
      "%r = stablehlo.fft %a, type = FFT, length = [8] : (tensor<2x8xcomplex<f32>>) -> tensor<2x8xcomplex<f32>>\n"
      "  return %r : tensor<2x8xcomplex<f32>>",
      "%r = stablehlo.fft %a, type = IFFT, length = [5] : (tensor<5xcomplex<f64>>) -> tensor<5xcomplex<f64>>\n"
      "  return %r : tensor<5xcomplex<f64>>",
  };
  const char* arg_types[] = {"tensor<3x17xf32>", "tensor<3x17xcomplex<f64>>", "tensor<2x8xcomplex<f32>>",
                             "tensor<5xcomplex<f64>>"};
  const int64_t outputs[] = {27, 99, 16, 5};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(programs[i]);
    const std::string text = std::string("func.func @main(%a: ") + arg_types[i] + ") -> " +
                             std::string(programs[i]).substr(std::string(programs[i]).rfind(": ") + 2) + " {\n  " +
                             programs[i] + "\n}";
    CudaCompileOptions options;
    options.assembler = assembler;
    auto program = CompileText(text, options);
    ASSERT_TRUE(program.ok()) << program.status().message();
    ASSERT_EQ(program->steps.size(), 1u);
    EXPECT_EQ(program->steps[0].launch.function, "jitd_fft0");
    EXPECT_EQ(program->steps[0].launch.buffers.size(), 2u);  // operand, result
    EXPECT_NE(program->steps[0].description.find("fft " + std::to_string(outputs[i]) + " elements"),
              std::string::npos)
        << program->steps[0].description;
    EXPECT_NE(program->ptx.find(".entry jitd_fft0("), std::string::npos);
    EXPECT_EQ(program->ptx.find(".extern"), std::string::npos) << program->ptx;
    EXPECT_EQ(program->ptx.find("__nv_"), std::string::npos) << program->ptx;
    EXPECT_TRUE(IsElf(program->cubin));
  }
  CudaCompileOptions options;
  options.assemble = false;
  auto refused = CompileText(R"(
func.func @main(%a: tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>> {
  %c = stablehlo.fft %a, type = FFT, length = [4, 8] : (tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>>
  return %c : tensor<4x8xcomplex<f32>>
})", options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'stablehlo.fft'"), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("one axis"), std::string::npos) << refused.status().message();
}

// triangular_solve: a thread per right-hand side (10 rows x 2 batches
// here, right side), unrolled; too large an a is refused by name.
TEST(CudaCompilerTest, TriangularSolveIsAThreadPerRightHandSide) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  auto program = CompileText(R"(
func.func @main(%a: tensor<2x8x8xf32>, %b: tensor<2x10x8xf32>) -> tensor<2x10x8xf32> {
  %x = "stablehlo.triangular_solve"(%a, %b) <{left_side = false, lower = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<2x8x8xf32>, tensor<2x10x8xf32>) -> tensor<2x10x8xf32>
  return %x : tensor<2x10x8xf32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 1u);
  EXPECT_EQ(program->steps[0].launch.function, "jitd_trsm0");
  EXPECT_EQ(program->steps[0].launch.buffers.size(), 3u);  // a, b, result
  EXPECT_NE(program->steps[0].description.find("20 right-hand sides"), std::string::npos)
      << program->steps[0].description;
  EXPECT_NE(program->ptx.find("div.rn.f64"), std::string::npos);  // x_i / a_ii in double
  EXPECT_EQ(program->ptx.find(".extern"), std::string::npos);
  EXPECT_TRUE(IsElf(program->cubin));

  options.assemble = false;
  auto refused = CompileText(R"(
func.func @main(%a: tensor<40x40xf32>, %b: tensor<40x1xf32>) -> tensor<40x1xf32> {
  %x = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<40x40xf32>, tensor<40x1xf32>) -> tensor<40x1xf32>
  return %x : tensor<40x1xf32>
})", options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'stablehlo.triangular_solve'"), std::string::npos)
      << refused.status().message();
}

// rng_bit_generator THREE_FRY, 64-bit outputs: one kernel over (state,
// new state, output); other algorithms are refused by name.
TEST(CudaCompilerTest, ThreeFryRngIsAThreadPerElement) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  auto program = CompileText(R"(
func.func @main(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<10x10xui64>) {
  %ns, %out = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<10x10xui64>)
  return %ns, %out : tensor<2xui64>, tensor<10x10xui64>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 1u);
  EXPECT_EQ(program->steps[0].launch.function, "jitd_rng0");
  ASSERT_EQ(program->steps[0].launch.buffers.size(), 3u);
  EXPECT_EQ(program->results[0], program->steps[0].launch.buffers[1]);  // the new state
  EXPECT_EQ(program->results[1], program->steps[0].launch.buffers[2]);  // the bits
  EXPECT_NE(program->steps[0].description.find("threefry 100 elements"), std::string::npos)
      << program->steps[0].description;
  // 20 rounds, each a 32-bit rotate (a funnel shift in PTX).
  size_t rotates = 0;
  for (size_t at = program->ptx.find("shf.l"); at != std::string::npos; at = program->ptx.find("shf.l", at + 1)) {
    ++rotates;
  }
  EXPECT_EQ(rotates, 20u) << program->ptx;
  EXPECT_TRUE(IsElf(program->cubin));

  options.assemble = false;
  auto refused = CompileText(R"(
func.func @main(%s: tensor<3xui64>) -> (tensor<3xui64>, tensor<8xui64>) {
  %ns, %out = stablehlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<3xui64>) -> (tensor<3xui64>, tensor<8xui64>)
  return %ns, %out : tensor<3xui64>, tensor<8xui64>
})", options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("THREE_FRY"), std::string::npos) << refused.status().message();
}

TEST(CudaCompilerTest, ProgramsSerializeValidatedAndCorruptBytesAreRefused) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  auto program = CompileText(kProgram, options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_TRUE(ValidateCudaProgram(*program).ok());
  const std::string bytes = SerializeCudaProgram(*program);
  auto back = DeserializeCudaProgram(bytes);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->cubin, program->cubin);
  EXPECT_EQ(back->ptx, program->ptx);
  EXPECT_EQ(back->arena_bytes, program->arena_bytes);
  ASSERT_EQ(back->steps.size(), program->steps.size());
  for (size_t i = 0; i < program->steps.size(); ++i) {
    EXPECT_EQ(back->steps[i].launch.function, program->steps[i].launch.function);
    EXPECT_EQ(back->steps[i].launch.buffers, program->steps[i].launch.buffers);
    EXPECT_EQ(back->steps[i].launch.grid, program->steps[i].launch.grid);
  }
  EXPECT_EQ(back->results, program->results);
  EXPECT_EQ(back->argument_types, program->argument_types);
  EXPECT_EQ(SerializeCudaProgram(*back), bytes);
  // Every truncation is an error, never a program.
  for (size_t cut = 0; cut < bytes.size(); cut += std::max<size_t>(1, bytes.size() / 97)) {
    EXPECT_FALSE(DeserializeCudaProgram(bytes.substr(0, cut)).ok()) << cut;
  }
  std::string foreign = bytes;
  foreign[0] = 'X';
  EXPECT_NE(DeserializeCudaProgram(foreign).status().message().find("bad magic"), std::string::npos);
  // A launch naming a buffer that does not exist fails validation by name.
  CudaProgram broken = *program;
  broken.steps[0].launch.buffers[0] = 999;
  auto refused = DeserializeCudaProgram(SerializeCudaProgram(broken));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("step 0 passes buffer 999"), std::string::npos)
      << refused.status().message();
  // The fingerprint names what decides the output.
  const std::string fingerprint = CudaCompileFingerprint(options);
  EXPECT_NE(fingerprint.find("sm_90"), std::string::npos) << fingerprint;
  EXPECT_NE(fingerprint.find(assembler->toolchain().version), std::string::npos) << fingerprint;
  CudaCompileOptions other = options;
  other.sm = "sm_89";
  EXPECT_NE(CudaCompileFingerprint(other), fingerprint);
}

TEST(CudaCompilerTest, ConvolutionIsAThreadPerOutputInTheInterpretersOrder) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const PtxCompiler* assembler = Assembler();
  if (!assembler) GTEST_SKIP() << PtxCompiler::Create().status().message();
  CudaCompileOptions options;
  options.assembler = assembler;
  options.pipeline = "";
  auto program = CompileText(R"(
func.func @main(%x: tensor<2x3x10xf32>, %w: tensor<4x3x5xf32>) -> tensor<2x4x6xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x10xf32>, tensor<4x3x5xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
})", options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 1u);
  EXPECT_EQ(program->steps[0].launch.function, "jitd_conv0");
  // 48 outputs, each 5 taps x 3 input features.
  EXPECT_NE(program->steps[0].description.find("exact convolution 48 outputs x 15"), std::string::npos)
      << program->steps[0].description;
  EXPECT_TRUE(IsElf(program->cubin));
  EXPECT_EQ(program->ptx.find("fma."), std::string::npos) << program->ptx;
}

TEST(CudaCompilerTest, PtxasAndNvJitLinkBothAssembleAndBothRejectBadPtx) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  auto module = ParseOrFail(kProgram);
  ASSERT_NE(module, nullptr);
  int assembled = 0;
  for (const std::string which : {"nvjitlink", "ptxas"}) {
    const PtxCompiler* assembler = Assembler(which);
    if (!assembler) continue;
    ++assembled;
    EXPECT_EQ(assembler->toolchain().assembler, which);
    EXPECT_GE(assembler->toolchain().max_ptx_version, 80) << assembler->toolchain().Describe();
    CudaCompileOptions options;
    options.assembler = assembler;
    options.verbose_assembly = true;
    auto program = CompileCuda(*module, options);
    ASSERT_TRUE(program.ok()) << which << ": " << program.status().message();
    EXPECT_TRUE(IsElf(program->cubin)) << which;
    EXPECT_NE(program->assembler_log.find("registers"), std::string::npos) << which << ": " << program->assembler_log;
    auto bad = assembler->Assemble(".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n",
                                   "sm_90");
    ASSERT_FALSE(bad.ok()) << which;
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << which;
    EXPECT_NE(bad.status().message().find("bogus"), std::string::npos) << which << ": " << bad.status().message();
  }
  if (assembled == 0) GTEST_SKIP() << "neither nvJitLink nor ptxas found";
}

TEST(CudaCompilerTest, PtxVersionIsWhatBothLlvmAndTheAssemblerRead) {
  EXPECT_EQ(MaxPtxVersionOfCudaRelease(12, 4), 84);
  EXPECT_EQ(MaxPtxVersionOfCudaRelease(12, 6), 85);
  EXPECT_EQ(MaxPtxVersionOfCudaRelease(13, 0), 90);
  EXPECT_EQ(MaxPtxVersionOfCudaRelease(14, 2), 90);  // newer: at least the table's last
  EXPECT_EQ(MaxPtxVersionOfCudaRelease(10, 2), 0);
  const int llvm_max = codegen::NvptxInfo().max_ptx_version;
  auto v = ChoosePtxVersion("sm_90", 90);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, std::min(llvm_max, 90));
  v = ChoosePtxVersion("sm_90", 80);  // an old assembler bounds it
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 80);
  v = ChoosePtxVersion("sm_90", 77);  // sm_90 needs 7.8
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("needs PTX ISA 7.8"), std::string::npos) << v.status().message();
  v = ChoosePtxVersion("sm_9x", 90);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("sm_9x"), std::string::npos);
}

// if / case: per branch but the last a kJumpUnless past it, each branch
// ends with a copy into the op's result buffer and (but the last) a jump
// to the end; a case first launches its selector kernel, whose
// predicates are 1-byte buffers. Nested in a while, jumps stay in range
// and the program survives serialization.
TEST(CudaCompilerTest, IfAndCaseBecomeHostJumpsBetweenTheirBranches) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  const std::string text = R"(
func.func @main(%i: tensor<i32>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %p = stablehlo.compare GT, %i, %zero : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %a = "stablehlo.if"(%p) ({
    %n = stablehlo.negate %x : tensor<4xf32>
    stablehlo.return %n : tensor<4xf32>
  }, {
    stablehlo.return %x : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  %b:2 = "stablehlo.case"(%i) ({
    %e = stablehlo.exponential %a : tensor<4xf32>
    stablehlo.return %e, %a : tensor<4xf32>, tensor<4xf32>
  }, {
    stablehlo.return %x, %x : tensor<4xf32>, tensor<4xf32>
  }, {
    %w:2 = stablehlo.while(%k = %zero, %v = %a) : tensor<i32>, tensor<4xf32>
      cond {
        %c = stablehlo.compare LT, %k, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      } do {
        %one = stablehlo.constant dense<1> : tensor<i32>
        %k1 = stablehlo.add %k, %one : tensor<i32>
        %v1 = stablehlo.sine %v : tensor<4xf32>
        stablehlo.return %k1, %v1 : tensor<i32>, tensor<4xf32>
      }
    stablehlo.return %w#1, %a : tensor<4xf32>, tensor<4xf32>
  }) : (tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %b#0, %b#1 : tensor<4xf32>, tensor<4xf32>
})";
  CudaCompileOptions options;
  options.assembler = Assembler();
  options.assemble = options.assembler != nullptr;
  options.pipeline = "inline,cse,dce";  // no folding: every op reaches codegen
  auto program = CompileText(text, options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  const std::vector<CudaStep>& steps = program->steps;
  std::string report = DescribeCudaProgram(*program);
  size_t if_tests = 0, case_tests = 0, selectors = 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    const CudaStep& step = steps[s];
    if (step.kind == CudaStep::Kind::kLaunch && step.launch.function == "jitd_case3") {
      ++selectors;
      ASSERT_EQ(step.launch.buffers.size(), 3u) << report;  // the index, two predicates
      EXPECT_EQ(program->buffers[static_cast<size_t>(step.launch.buffers[0])].bytes, 4);
      EXPECT_EQ(program->buffers[static_cast<size_t>(step.launch.buffers[1])].bytes, 1);
      EXPECT_EQ(program->buffers[static_cast<size_t>(step.launch.buffers[2])].bytes, 1);
      // Two tests follow, on its predicates in order.
    }
    if (step.kind == CudaStep::Kind::kJumpUnless) {
      if (step.description.starts_with("if")) ++if_tests;
      if (step.description.starts_with("case")) ++case_tests;
      ASSERT_GT(step.target, static_cast<int32_t>(s)) << report;
      // A branch's test skips past the branch's jump to the end.
      if (!step.description.starts_with("while")) {
        EXPECT_EQ(steps[static_cast<size_t>(step.target) - 1].kind, CudaStep::Kind::kJump) << report;
      }
    }
  }
  EXPECT_EQ(selectors, 1u) << report;
  EXPECT_EQ(if_tests, 1u) << report;
  EXPECT_EQ(case_tests, 2u) << report;
  // The selector is in the PTX (and assembled when an assembler is here).
  EXPECT_NE(program->ptx.find(".entry jitd_case3"), std::string::npos);
  if (options.assemble) EXPECT_FALSE(program->cubin.empty());
  ASSERT_TRUE(ValidateCudaProgram(*program).ok());
  auto back = DeserializeCudaProgram(SerializeCudaProgram(*program));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->steps.size(), steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    EXPECT_EQ(back->steps[s].kind, steps[s].kind);
    EXPECT_EQ(back->steps[s].target, steps[s].target);
    EXPECT_EQ(back->steps[s].launch.buffers, steps[s].launch.buffers);
  }
  // The case's predicates and the two results never share arena bytes
  // with each other (they are live across the branches).
  const auto& b = program->buffers;
  const int32_t r0 = program->results[0], r1 = program->results[1];
  if (b[static_cast<size_t>(r0)].kind == CudaBuffer::Kind::kTemporary &&
      b[static_cast<size_t>(r1)].kind == CudaBuffer::Kind::kTemporary) {
    const int64_t o0 = b[static_cast<size_t>(r0)].offset, o1 = b[static_cast<size_t>(r1)].offset;
    EXPECT_TRUE(o0 + 16 <= o1 || o1 + 16 <= o0) << report;
  }
}

}  // namespace
}  // namespace jitd::devices::cuda
