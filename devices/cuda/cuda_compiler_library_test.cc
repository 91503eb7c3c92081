// The cuda compiler's library calls offline: dot_general as a cuBLASLt
// step (precision and --cuda-exact-f32 in its plan, layouts cuBLASLt does
// not take left to the exact kernel), fft as a cuFFT step with its input
// copy and normalize kernel, both off when the libraries are; the steps
// through serialization. No GPU, driver or library needed.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "devices/cuda/cublaslt_plan.h"
#include "devices/cuda/cuda_compiler.h"
#include "devices/cuda/cufft_plan.h"
#include "devices/cuda/ptx_compiler.h"
#include "jit/codegen/nvptx/nvptx_backend.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::devices::cuda {
namespace {

using frontend::testing::ParseOrFail;

CudaCompileOptions Options(bool libraries) {
  CudaCompileOptions options;
  options.assemble = false;  // PTX is enough here
  options.pipeline = "";     // nothing folded: every op reaches the compiler
  options.use_cublaslt = libraries;
  options.use_cufft = libraries;
  options.library_min_multiply_adds = 0;  // small problems through the libraries too
  return options;
}

const CudaStep* FirstLibraryCall(const CudaProgram& p) {
  for (const CudaStep& s : p.steps) {
    if (s.kind == CudaStep::Kind::kLibraryCall) return &s;
  }
  return nullptr;
}

constexpr char kBatchedDot[] = R"(
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
})";

TEST(CudaCompilerLibraryTest, DotGeneralBecomesOneCublasLtCall) {
  auto module = ParseOrFail(kBatchedDot);
  ASSERT_NE(module, nullptr);
  auto program = CompileCuda(*module, Options(true));
  ASSERT_TRUE(program.ok()) << program.status().message();
  EXPECT_EQ(program->library_calls, 1);
  EXPECT_EQ(program->launches, 0);
  EXPECT_TRUE(program->ptx.empty());  // no kernel at all
  const CudaStep* call = FirstLibraryCall(*program);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->library.library, CudaLibraryCall::Library::kCublasLt);
  ASSERT_EQ(call->library.buffers.size(), 3u);  // lhs, rhs, result
  EXPECT_EQ(program->buffers[static_cast<size_t>(call->library.buffers[0])].kind, CudaBuffer::Kind::kArgument);
  EXPECT_EQ(program->results[0], call->library.buffers[2]);
  auto plan = DecodeMatmulPlan(call->library.plan);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->batch, 2);
  EXPECT_EQ(plan->compute, LibCompute::k32FFastTF32);  // DEFAULT precision may use TF32
  EXPECT_NE(DescribeCudaProgram(*program).find("1 library calls"), std::string::npos) << DescribeCudaProgram(*program);

  // Serialized and back, the call and its plan are the same.
  auto back = DeserializeCudaProgram(SerializeCudaProgram(*program));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->steps.size(), program->steps.size());
  EXPECT_EQ(back->library_calls, 1);
  const CudaStep* back_call = FirstLibraryCall(*back);
  ASSERT_NE(back_call, nullptr);
  EXPECT_EQ(back_call->library.plan, call->library.plan);
  EXPECT_EQ(back_call->library.buffers, call->library.buffers);
}

// A dot or convolution of fewer multiply-adds than library_min_multiply_adds
// gets jitd's exact kernel; at the threshold, the library call.
TEST(CudaCompilerLibraryTest, SmallDotsAndConvolutionsKeepTheExactKernel) {
  constexpr char kConv[] = R"(
func.func @main(%x: tensor<1x8x8x4xf32>, %k: tensor<3x3x4x2xf32>) -> tensor<1x6x6x2xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x4x2xf32>) -> tensor<1x6x6x2xf32>
  return %0 : tensor<1x6x6x2xf32>
})";
  struct Case {
    const char* text;
    int64_t multiply_adds;  // result elements x products summed per element
  };
  for (const Case& c : {Case{kBatchedDot, 2 * 3 * 5 * 4}, Case{kConv, 6 * 6 * 2 * (3 * 3 * 4)}}) {
    auto module = ParseOrFail(c.text);
    ASSERT_NE(module, nullptr);
    CudaCompileOptions options = Options(true);
    options.use_cudnn = true;
    options.library_min_multiply_adds = c.multiply_adds + 1;
    auto small = CompileCuda(*module, options);
    ASSERT_TRUE(small.ok()) << small.status().message();
    EXPECT_EQ(small->library_calls, 0) << DescribeCudaProgram(*small);
    EXPECT_EQ(small->launches, 1) << DescribeCudaProgram(*small);
    EXPECT_NE(DescribeCudaProgram(*small).find("exact"), std::string::npos) << DescribeCudaProgram(*small);
    options.library_min_multiply_adds = c.multiply_adds;
    auto large = CompileCuda(*module, options);
    ASSERT_TRUE(large.ok()) << large.status().message();
    EXPECT_EQ(large->library_calls, 1) << DescribeCudaProgram(*large);
  }
  // The default: corpus-sized problems keep the kernel.
  auto module = ParseOrFail(kBatchedDot);
  ASSERT_NE(module, nullptr);
  CudaCompileOptions options = Options(true);
  options.library_min_multiply_adds = CudaCompileOptions{}.library_min_multiply_adds;
  auto program = CompileCuda(*module, options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  EXPECT_EQ(program->library_calls, 0);
}

TEST(CudaCompilerLibraryTest, ExactF32SwitchTurnsTf32Off) {
  auto module = ParseOrFail(kBatchedDot);
  ASSERT_NE(module, nullptr);
  CudaCompileOptions options = Options(true);
  options.exact_f32 = true;
  auto program = CompileCuda(*module, options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  auto plan = DecodeMatmulPlan(FirstLibraryCall(*program)->library.plan);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->compute, LibCompute::k32F);
  EXPECT_NE(CudaCompileFingerprint(options).find("exact-f32"), std::string::npos);
  EXPECT_EQ(CudaCompileFingerprint(Options(false)).find("cublaslt"), std::string::npos);
}

TEST(CudaCompilerLibraryTest, DotsLaidOutOtherwiseArePermutedFirstIntegerOnesKeepTheKernel) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  // A batch dimension in the middle of lhs, and an integer dot.
  auto module = ParseOrFail(R"(
func.func @main(%a: tensor<3x2x4xf32>, %b: tensor<2x4x5xf32>, %i: tensor<2x2xi32>) -> (tensor<2x3x5xf32>, tensor<2x2xi32>) {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [1] x [0], contracting_dims = [2] x [1] : (tensor<3x2x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %1 = stablehlo.dot_general %i, %i, contracting_dims = [1] x [0] : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
  return %0, %1 : tensor<2x3x5xf32>, tensor<2x2xi32>
})");
  ASSERT_NE(module, nullptr);
  auto program = CompileCuda(*module, Options(true));
  ASSERT_TRUE(program.ok()) << program.status().message();
  EXPECT_EQ(program->library_calls, 1);
  ASSERT_EQ(program->steps.size(), 3u) << DescribeCudaProgram(*program);
  EXPECT_EQ(program->steps[0].launch.function, "jitd_permute0");  // lhs to [batch, free, contracting]
  const CudaLibraryCall& call = program->steps[1].library;
  ASSERT_EQ(call.buffers.size(), 3u);
  EXPECT_EQ(call.buffers[0], program->steps[0].launch.buffers[1]);  // the permuted copy
  EXPECT_EQ(program->buffers[static_cast<size_t>(call.buffers[1])].kind, CudaBuffer::Kind::kArgument);  // rhs in place
  auto plan = DecodeMatmulPlan(call.plan);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->batch, 2);
  EXPECT_EQ(plan->n, 3);
  EXPECT_EQ(plan->m, 5);
  EXPECT_EQ(program->steps[2].launch.function, "jitd_dot0");  // the integer dot
  EXPECT_NE(program->ptx.find(".entry jitd_permute0"), std::string::npos);
}

constexpr char kIrfft3[] = R"(
func.func @main(%x: tensor<2x3x4x5xcomplex<f32>>) -> tensor<2x3x4x8xf32> {
  %0 = stablehlo.fft %x, type = IRFFT, length = [3, 4, 8] : (tensor<2x3x4x5xcomplex<f32>>) -> tensor<2x3x4x8xf32>
  return %0 : tensor<2x3x4x8xf32>
})";

TEST(CudaCompilerLibraryTest, ThreeAxisIrfftIsCopyCallNormalize) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  auto module = ParseOrFail(kIrfft3);
  ASSERT_NE(module, nullptr);
  // Without cuFFT: refused by name, saying why.
  auto refused = CompileCuda(*module, Options(false));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(refused.status().message().find("cuFFT is off"), std::string::npos) << refused.status().message();

  auto program = CompileCuda(*module, Options(true));
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 3u) << DescribeCudaProgram(*program);
  EXPECT_EQ(program->steps[0].kind, CudaStep::Kind::kLaunch);  // the input's scratch copy
  EXPECT_EQ(program->steps[1].kind, CudaStep::Kind::kLibraryCall);
  EXPECT_EQ(program->steps[2].kind, CudaStep::Kind::kLaunch);  // divide by 3 * 4 * 8
  const CudaLibraryCall& call = program->steps[1].library;
  EXPECT_EQ(call.library, CudaLibraryCall::Library::kCufft);
  ASSERT_EQ(call.buffers.size(), 2u);
  // The call reads the copy, not the argument, and the copy is what step 0 wrote.
  EXPECT_EQ(program->buffers[static_cast<size_t>(call.buffers[0])].kind, CudaBuffer::Kind::kTemporary);
  EXPECT_EQ(program->steps[0].launch.buffers.back(), call.buffers[0]);
  // The copy and the result do not share arena bytes.
  const CudaBuffer& scratch = program->buffers[static_cast<size_t>(call.buffers[0])];
  const CudaBuffer& result = program->buffers[static_cast<size_t>(call.buffers[1])];
  EXPECT_TRUE(scratch.offset + scratch.bytes <= result.offset || result.offset + result.bytes <= scratch.offset);
  EXPECT_EQ(program->steps[2].launch.buffers, std::vector<int32_t>{call.buffers[1]});
  auto plan = DecodeFftPlan(call.plan);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->n, (std::vector<int64_t>{3, 4, 8}));
  EXPECT_TRUE(CheckFftBuffers(*plan, scratch.bytes, result.bytes).ok());
  EXPECT_NE(program->ptx.find(".entry jitd_fft_normalize0"), std::string::npos);
  EXPECT_NE(program->ptx.find("div.rn.f32"), std::string::npos);
}

TEST(CudaCompilerLibraryTest, ForwardFftIsOneCall) {
  auto module = ParseOrFail(R"(
func.func @main(%x: tensor<4x8xcomplex<f64>>) -> tensor<4x8xcomplex<f64>> {
  %0 = stablehlo.fft %x, type = FFT, length = [8] : (tensor<4x8xcomplex<f64>>) -> tensor<4x8xcomplex<f64>>
  return %0 : tensor<4x8xcomplex<f64>>
})");
  ASSERT_NE(module, nullptr);
  auto program = CompileCuda(*module, Options(true));
  ASSERT_TRUE(program.ok()) << program.status().message();
  EXPECT_EQ(program->library_calls, 1);
  EXPECT_EQ(program->launches, 0);
}

// Not a library call: cholesky's own kernel (cholesky_kernel.h), with its
// double scratch apart from the result; assembled when an assembler is here.
TEST(CudaCompilerLibraryTest, CholeskyIsAKernelWithADoubleScratch) {
  if (!codegen::FindLibdevice({}).ok()) GTEST_SKIP() << codegen::FindLibdevice({}).status().message();
  auto module = ParseOrFail(R"(
func.func @main(%a: tensor<2x4x4xf32>, %b: tensor<3x3xf64>) -> (tensor<2x4x4xf32>, tensor<3x3xf64>) {
  %0 = "stablehlo.cholesky"(%a) {lower = true} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %1 = "stablehlo.cholesky"(%b) {lower = false} : (tensor<3x3xf64>) -> tensor<3x3xf64>
  return %0, %1 : tensor<2x4x4xf32>, tensor<3x3xf64>
})");
  ASSERT_NE(module, nullptr);
  auto program = CompileCuda(*module, Options(false));
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 2u);
  const CudaKernelLaunch& l = program->steps[0].launch;
  EXPECT_EQ(l.function, "jitd_cholesky0");
  ASSERT_EQ(l.buffers.size(), 3u);  // a, result, scratch
  const CudaBuffer& result = program->buffers[static_cast<size_t>(l.buffers[1])];
  const CudaBuffer& scratch = program->buffers[static_cast<size_t>(l.buffers[2])];
  EXPECT_EQ(scratch.bytes, 2 * 4 * 4 * 8);
  EXPECT_TRUE(scratch.offset + scratch.bytes <= result.offset || result.offset + result.bytes <= scratch.offset);
  EXPECT_NE(program->ptx.find(".entry jitd_cholesky1"), std::string::npos);
  EXPECT_NE(program->ptx.find("sqrt.rn.f64"), std::string::npos);

  auto complex = ParseOrFail(R"(
func.func @main(%a: tensor<2x2xcomplex<f32>>) -> tensor<2x2xcomplex<f32>> {
  %0 = "stablehlo.cholesky"(%a) {lower = true} : (tensor<2x2xcomplex<f32>>) -> tensor<2x2xcomplex<f32>>
  return %0 : tensor<2x2xcomplex<f32>>
})");
  ASSERT_NE(complex, nullptr);
  auto refused = CompileCuda(*complex, Options(false));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'stablehlo.cholesky'"), std::string::npos) << refused.status().message();

  if (auto assembler = PtxCompiler::Create(); assembler.ok()) {
    CudaCompileOptions options = Options(false);
    options.assemble = true;
    options.assembler = assembler->get();
    auto assembled = CompileCuda(*module, options);
    ASSERT_TRUE(assembled.ok()) << assembled.status().message();
    EXPECT_FALSE(assembled->cubin.empty());
  }
}

}  // namespace
}  // namespace jitd::devices::cuda
