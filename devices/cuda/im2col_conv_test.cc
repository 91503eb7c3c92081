// The im2col + cuBLASLt convolution fallback (im2col_plan.h) offline:
//  - the compiler picks it when cuDNN is off or refuses, and the program
//    has the im2col launch, the filter / product permutes as needed and
//    one cuBLASLt call, with the kernel in the PTX;
//  - its numbers: the patch matrix built on the host from Im2colSource
//    (what the kernel computes), the filter and product permuted on the
//    host, and the matmul run by the fake cuBLASLt from the plan's
//    descriptors (fake_libraries.h computes f32 / f64 from them), give
//    jit/eval's convolution on configurations with lhs dilation, window
//    reversal, negative and asymmetric padding, rhs dilation, strides,
//    feature and batch groups and several layouts.
// The im2col kernel's IR itself runs only on a GPU
// (cuda_library_gpu_test.cc); here it is generated and verified.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "devices/cuda/cuda_compiler.h"
#include "devices/cuda/cuda_libraries.h"
#include "devices/cuda/fake_libraries.h"
#include "devices/cuda/im2col_plan.h"
#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::devices::cuda {
namespace {

using frontend::testing::ParseOrFail;

struct Config {
  const char* name;
  const char* text;
};

// Each: func @main(%lhs, %rhs) returning one convolution.
const Config kConfigs[] = {
    {"nhwc_pad_same",
     R"(func.func @main(%lhs: tensor<2x5x5x3xf32>, %rhs: tensor<3x3x3x4xf32>) -> tensor<2x5x5x4xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x5x5x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x5x5x4xf32>
  return %0 : tensor<2x5x5x4xf32>
})"},
    {"lhs_dilation_strides_asymmetric_pad",
     R"(func.func @main(%lhs: tensor<1x2x4x3xf32>, %rhs: tensor<3x2x2x2xf32>) -> tensor<1x3x7x3xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 2], pad = [[1, 0], [2, 1]], lhs_dilate = [2, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x4x3xf32>, tensor<3x2x2x2xf32>) -> tensor<1x3x7x3xf32>
  return %0 : tensor<1x3x7x3xf32>
})"},
    {"reversal_negative_pad_rhs_dilation",
     R"(func.func @main(%lhs: tensor<2x3x9xf32>, %rhs: tensor<2x3x3xf32>) -> tensor<2x2x6xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {pad = [[-1, 2]], rhs_dilate = [2], reverse = [true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x9xf32>, tensor<2x3x3xf32>) -> tensor<2x2x6xf32>
  return %0 : tensor<2x2x6xf32>
})"},
    {"feature_groups_feature_major_output",
     R"(func.func @main(%lhs: tensor<2x6x4xf32>, %rhs: tensor<3x2x6xf32>) -> tensor<6x2x6xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, f]x[0, i, o]->[f, b, 0], window = {pad = [[1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x6x4xf32>, tensor<3x2x6xf32>) -> tensor<6x2x6xf32>
  return %0 : tensor<6x2x6xf32>
})"},
    {"batch_groups_f64",
     R"(func.func @main(%lhs: tensor<4x3x5xf64>, %rhs: tensor<4x3x2xf64>) -> tensor<2x4x4xf64> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<4x3x5xf64>, tensor<4x3x2xf64>) -> tensor<2x4x4xf64>
  return %0 : tensor<2x4x4xf64>
})"},
};

const ir::Op& ConvOf(const ir::Module& module) {
  return *module.FindFunction("main")->entry()->ops().front();
}

CudaCompileOptions Options(bool cudnn) {
  CudaCompileOptions options;
  options.assemble = false;
  options.pipeline = "";
  options.use_cublaslt = true;
  options.use_cudnn = cudnn;
  options.library_min_multiply_adds = 0;  // small convolutions through the libraries too
  return options;
}

// dims permuted: result dimension k is dims[perm[k]] (perm empty: a copy).
std::vector<uint8_t> Permute(const std::vector<uint8_t>& in, int64_t element, const std::vector<int64_t>& dims,
                             const std::vector<int64_t>& perm) {
  if (perm.empty()) return in;
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  std::vector<uint8_t> out(in.size());
  const int64_t count = static_cast<int64_t>(in.size()) / element;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, source = 0;
    for (size_t k = perm.size(); k-- > 0;) {
      const int64_t extent = dims[static_cast<size_t>(perm[k])];
      source += (rest % extent) * strides[static_cast<size_t>(perm[k])];
      rest /= extent;
    }
    std::memcpy(out.data() + i * element, in.data() + source * element, static_cast<size_t>(element));
  }
  return out;
}

double At(const std::vector<uint8_t>& bytes, int64_t element, int64_t i) {
  if (element == 8) {
    double v;
    std::memcpy(&v, bytes.data() + i * 8, 8);
    return v;
  }
  float v;
  std::memcpy(&v, bytes.data() + i * 4, 4);
  return v;
}

TEST(Im2colConvTest, CompilerUsesItWithoutCudnn) {
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(c.name);
    auto module = ParseOrFail(c.text);
    ASSERT_TRUE(module);
    auto program = CompileCuda(*module, Options(false));
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    EXPECT_EQ(program->library_calls, 1);
    ASSERT_FALSE(program->steps.empty());
    EXPECT_EQ(program->steps.front().launch.function, "jitd_im2col0");
    EXPECT_NE(program->ptx.find(".entry jitd_im2col0"), std::string::npos);
    EXPECT_EQ(program->ptx.find("jitd_conv"), std::string::npos) << "the direct kernel was emitted";
    int library = 0;
    for (const CudaStep& s : program->steps) {
      if (s.kind != CudaStep::Kind::kLibraryCall) continue;
      ++library;
      EXPECT_EQ(s.library.library, CudaLibraryCall::Library::kCublasLt);
      EXPECT_NE(s.description.find("convolution as im2col"), std::string::npos) << s.description;
      EXPECT_TRUE(DecodeMatmulPlan(s.library.plan).ok());
    }
    EXPECT_EQ(library, 1);
  }
}

TEST(Im2colConvTest, TakesWhatCudnnRefuses) {
  // lhs dilation: cuDNN refuses, im2col takes it even with cuDNN on.
  auto module = ParseOrFail(kConfigs[1].text);
  ASSERT_TRUE(module);
  auto program = CompileCuda(*module, Options(true));
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_EQ(program->library_calls, 1);
  EXPECT_NE(DescribeCudaProgram(*program).find("lhs_dilation"), std::string::npos) << DescribeCudaProgram(*program);
  // A plain NHWC convolution stays with cuDNN when it is on.
  auto plain = ParseOrFail(kConfigs[0].text);
  auto cudnn = CompileCuda(*plain, Options(true));
  ASSERT_TRUE(cudnn.ok()) << cudnn.status().ToString();
  EXPECT_EQ(cudnn->ptx.find("jitd_im2col"), std::string::npos);
}

TEST(Im2colConvTest, PatchMatrixOverTheCapKeepsTheDirectKernel) {
  // 2048 x 2048 outputs x 25 taps x 4 bytes = 400 MiB of patches.
  auto module = ParseOrFail(R"(func.func @main(%lhs: tensor<1x1x2048x2048xf32>, %rhs: tensor<1x1x5x5xf32>) -> tensor<1x1x2048x2048xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[2, 2], [2, 2]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x2048x2048xf32>, tensor<1x1x5x5xf32>) -> tensor<1x1x2048x2048xf32>
  return %0 : tensor<1x1x2048x2048xf32>
})");
  ASSERT_TRUE(module);
  StatusOr<Im2colConvPlan> plan = PlanIm2colConvolution(ConvOf(*module), false);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kNotFound);
  EXPECT_NE(plan.status().message().find("cap"), std::string::npos) << plan.status().message();
  auto program = CompileCuda(*module, Options(false));
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_EQ(program->library_calls, 0);
  EXPECT_NE(program->ptx.find(".entry jitd_conv0"), std::string::npos);
}

TEST(Im2colConvTest, IntegerConvolutionsKeepTheDirectKernel) {
  auto module = ParseOrFail(R"(func.func @main(%lhs: tensor<1x1x4xi32>, %rhs: tensor<1x1x2xi32>) -> tensor<1x1x3xi32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x4xi32>, tensor<1x1x2xi32>) -> tensor<1x1x3xi32>
  return %0 : tensor<1x1x3xi32>
})");
  ASSERT_TRUE(module);
  StatusOr<Im2colConvPlan> plan = PlanIm2colConvolution(ConvOf(*module), false);
  EXPECT_EQ(plan.status().code(), StatusCode::kNotFound);
  auto program = CompileCuda(*module, Options(false));
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_EQ(program->library_calls, 0);
}

TEST(Im2colConvTest, PlanFields) {
  auto module = ParseOrFail(kConfigs[3].text);  // feature groups, [b, 0, f] input, [f, b, 0] output
  ASSERT_TRUE(module);
  StatusOr<Im2colConvPlan> plan = PlanIm2colConvolution(ConvOf(*module), false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups, 2);
  EXPECT_FALSE(plan->batch_groups);
  EXPECT_EQ(plan->channels, 2);
  EXPECT_EQ(plan->out_per_group, 3);
  EXPECT_EQ(plan->rows, 2 * 6);
  EXPECT_EQ(plan->depth, 2 * 3);
  EXPECT_EQ(plan->in_feature_stride, 1);
  EXPECT_EQ(plan->in_batch_stride, 24);
  EXPECT_EQ(plan->filter_permutation, (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(plan->gemm_dims, (std::vector<int64_t>{2, 2, 6, 3}));
  EXPECT_EQ(plan->output_permutation, (std::vector<int64_t>{0, 3, 1, 2}));
  EXPECT_EQ(plan->matmul.batch, 2);
  EXPECT_EQ(plan->matmul.k, 6);
  // Row 0 (batch 0, output 0), group 1, channel 0, tap 0 reads padding;
  // tap 1 reads input position 0, feature 2.
  EXPECT_EQ(Im2colSource(*plan, 1 * 12 * 6 + 0), -1);
  EXPECT_EQ(Im2colSource(*plan, 1 * 12 * 6 + 1), 2);
}

TEST(Im2colConvTest, MatchesTheInterpreterThroughTheFakeMatmul) {
  ResetFakeLibraryLog();
  FakeLibraries().compute = true;
  const CublasLtSymbols& lt = FakeCublasLtSymbols();
  cublasLtHandle_t handle = nullptr;
  ASSERT_EQ(lt.cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(c.name);
    auto module = ParseOrFail(c.text);
    ASSERT_TRUE(module);
    const ir::Op& op = ConvOf(*module);
    StatusOr<Im2colConvPlan> plan = PlanIm2colConvolution(op, /*exact_f32=*/true);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    const ir::Type& in_type = op.operand(0)->type();
    const ir::Type& kernel_type = op.operand(1)->type();
    const ir::Type& out_type = op.result(0)->type();
    auto lhs = eval::RandomLiteral(in_type, 7);
    auto rhs = eval::RandomLiteral(kernel_type, 11);
    ASSERT_TRUE(lhs.ok() && rhs.ok());
    const int64_t e = plan->element_bytes;
    // im2col.
    std::vector<uint8_t> patches(static_cast<size_t>(plan->patch_elements * e), 0);
    for (int64_t i = 0; i < plan->patch_elements; ++i) {
      const int64_t from = Im2colSource(*plan, i);
      if (from >= 0) std::memcpy(patches.data() + i * e, lhs->bytes().data() + from * e, static_cast<size_t>(e));
    }
    // The filter to [O, Cg, taps].
    std::vector<uint8_t> kernel(rhs->bytes().begin(), rhs->bytes().end());
    const std::vector<uint8_t> filter = Permute(kernel, e, kernel_type.dims(), plan->filter_permutation);
    // The matmul from the plan's descriptors.
    std::vector<uint8_t> product(static_cast<size_t>(out_type.num_elements() * e));
    Status ran = RunCublasLtMatmul(lt, handle, plan->matmul, reinterpret_cast<CUdeviceptr>(patches.data()),
                                   reinterpret_cast<CUdeviceptr>(filter.data()),
                                   reinterpret_cast<CUdeviceptr>(product.data()), 0, nullptr);
    ASSERT_TRUE(ran.ok()) << ran.ToString();
    const std::vector<uint8_t> result = Permute(product, e, plan->gemm_dims, plan->output_permutation);
    // jit/eval's convolution.
    std::vector<eval::RuntimeValue> args;
    args.emplace_back(std::move(*lhs));
    args.emplace_back(std::move(*rhs));
    auto expected = eval::EvaluateFunction(*module, *module->FindFunction("main"), std::move(args));
    ASSERT_TRUE(expected.ok()) << expected.status().ToString();
    const auto& want = (*expected)[0].literal().bytes();
    ASSERT_EQ(want.size(), result.size());
    const std::vector<uint8_t> want_bytes(want.begin(), want.end());
    for (int64_t i = 0; i < out_type.num_elements(); ++i) {
      const double w = At(want_bytes, e, i), got = At(result, e, i);
      ASSERT_NEAR(got, w, (e == 8 ? 1e-12 : 1e-5) * (1 + std::fabs(w))) << "element " << i;
    }
  }
  EXPECT_EQ(lt.cublasLtDestroy(handle), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(FakeLibraries().matmuls.size(), std::size(kConfigs));
}

}  // namespace
}  // namespace jitd::devices::cuda
