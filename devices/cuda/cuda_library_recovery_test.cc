// Library calls that break the context go through the same recovery as a
// faulting kernel (cuda_runtime.h): over the fake driver and the fake
// cuBLASLt / cuFFT / cuDNN tables, a library entry that fails after the
// context was broken under it (FakeLibraryLog::on_execute ->
// FakeDriver::InjectStickyError, as a fault in the library's kernel would)
// fails the execution UNAVAILABLE naming the library call and the reset;
// the context is re-created once, and the next execution works with the
// library's handle / plan made again in the new context. A library failure
// that leaves the context healthy is only that call's error, no reset (its
// cuBLASLt / cuDNN handle is made again for the next call).
// And cuFFT's work area: from jitd's pool, on the client's quota.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_libraries.h"
#include "devices/cuda/fake_driver.h"
#include "devices/cuda/fake_libraries.h"
#include "devices/cuda/testing.h"
#include "devices/memory_account.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::devices::cuda {
namespace {

using frontend::testing::ParseOrFail;

using eval::RuntimeValue;

RuntimeValue Filled(ir::DType dtype, const std::vector<int64_t>& dims) {
  const ir::Type type = ir::Type::Tensor(dtype, dims);
  std::vector<uint8_t> bytes(static_cast<size_t>(type.byte_size()));
  for (size_t i = 0; i < bytes.size(); i += 4) {
    const float v = static_cast<float>(static_cast<int>(i / 4 % 5) - 2);
    std::memcpy(bytes.data() + i, &v, 4);
  }
  auto literal = ir::Literal::FromBytes(type, std::move(bytes));
  EXPECT_TRUE(literal.ok());
  return RuntimeValue(std::move(*literal));
}

struct Fixture {
  Fixture() {
    ResetFakeLibraryLog();
    FakeLibraries().compute = true;
    libraries = CudaLibraries::ForTables(&FakeCublasLtSymbols(), &FakeCufftSymbols(), &FakeCudnnSymbols());
    auto opened = CudaRuntime::Open(fake.symbols());
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    runtime = std::move(*opened);
    testing::LibrariesForSmallProblems();
    device = CudaDevice::CreateForRuntime(runtime.get(), libraries.get());
  }
  ~Fixture() {
    FakeLibraries().on_execute = nullptr;
    device.reset();
    runtime.reset();
  }
  int Calls(const std::string& name) const {
    return static_cast<int>(std::count(FakeLibraries().calls.begin(), FakeLibraries().calls.end(), name));
  }
  // The next library entry that runs work breaks the context first.
  void BreakOnNextLibraryCall() {
    FakeLibraries().on_execute = [this](const std::string&) {
      fake.InjectStickyError(CUDA_ERROR_ILLEGAL_ADDRESS);
      FakeLibraries().on_execute = nullptr;
    };
  }
  FakeDriver fake;
  std::unique_ptr<CudaLibraries> libraries;
  std::unique_ptr<CudaRuntime> runtime;
  std::unique_ptr<CudaDevice> device;
};

constexpr char kDot[] = R"(
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [HIGHEST, HIGHEST] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
})";

constexpr char kFft[] = R"(
func.func @main(%x: tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>> {
  %0 = stablehlo.fft %x, type = FFT, length = [8] : (tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>>
  return %0 : tensor<4x8xcomplex<f32>>
})";

constexpr char kConv[] = R"(
func.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
  return %0 : tensor<1x4x5x5xf32>
})";

TEST(CudaLibraryRecovery, MatmulThatBreaksTheContextResetsIt) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kDot), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {Filled(ir::DType::kF32, {2, 3, 4}), Filled(ir::DType::kF32, {2, 4, 5})};
  auto first = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(f.Calls("cublasLtCreate"), 1);

  f.BreakOnNextLibraryCall();
  FakeLibraries().matmul_status = CUBLAS_STATUS_EXECUTION_FAILED;
  auto broken = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kUnavailable) << broken.status().ToString();
  EXPECT_NE(broken.status().message().find("cublasLtMatmul"), std::string::npos) << broken.status().message();
  EXPECT_NE(broken.status().message().find("context was reset"), std::string::npos) << broken.status().message();
  EXPECT_EQ(f.fake.context_resets(), 1);
  EXPECT_FALSE(f.fake.broken());
  EXPECT_EQ(f.runtime->stats().context_resets, 1u);

  // The next execution works: a new cuBLASLt handle in the new context,
  // the same result as before.
  FakeLibraries().matmul_status = CUBLAS_STATUS_SUCCESS;
  auto again = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(f.Calls("cublasLtCreate"), 2);
  const auto want = (*first)[0].literal().bytes();
  const auto got = (*again)[0].literal().bytes();
  EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin(), got.end()));
}

TEST(CudaLibraryRecovery, FailureWithAHealthyContextIsOnlyThatCall) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kDot), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {Filled(ir::DType::kF32, {2, 3, 4}), Filled(ir::DType::kF32, {2, 4, 5})};
  FakeLibraries().matmul_status = CUBLAS_STATUS_EXECUTION_FAILED;
  auto failed = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().code(), StatusCode::kUnavailable) << failed.status().ToString();
  EXPECT_NE(failed.status().message().find("CUBLAS_STATUS_EXECUTION_FAILED"), std::string::npos)
      << failed.status().message();
  EXPECT_EQ(f.fake.context_resets(), 0);
  // The handle the failed call used is suspect: the next call makes another.
  FakeLibraries().matmul_status = CUBLAS_STATUS_SUCCESS;
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  EXPECT_EQ(f.Calls("cublasLtCreate"), 2);
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  EXPECT_EQ(f.Calls("cublasLtCreate"), 2);  // and keeps it while calls succeed
}

TEST(CudaLibraryRecovery, FailedConvolutionRemakesTheCudnnHandle) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kConv), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {Filled(ir::DType::kF32, {1, 2, 5, 5}), Filled(ir::DType::kF32, {4, 2, 3, 3})};
  FakeLibraries().conv_status = CUDNN_STATUS_EXECUTION_FAILED;
  auto failed = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().code(), StatusCode::kUnavailable) << failed.status().ToString();
  EXPECT_EQ(f.fake.context_resets(), 0);
  EXPECT_EQ(f.Calls("cudnnDestroy"), 1);  // the suspect handle went
  FakeLibraries().conv_status = CUDNN_STATUS_SUCCESS;
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  EXPECT_EQ(f.Calls("cudnnCreate"), 2);
}

TEST(CudaLibraryRecovery, FftThatBreaksTheContextResetsItAndRemakesThePlan) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kFft), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {Filled(ir::DType::kC64, {4, 8})};
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  EXPECT_EQ(f.Calls("cufftMakePlanMany64"), 1);
  f.BreakOnNextLibraryCall();
  FakeLibraries().exec_status = CUFFT_EXEC_FAILED;
  auto broken = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kUnavailable) << broken.status().ToString();
  EXPECT_NE(broken.status().message().find("cufftExecC2C"), std::string::npos) << broken.status().message();
  EXPECT_EQ(f.fake.context_resets(), 1);
  FakeLibraries().exec_status = CUFFT_SUCCESS;
  auto again = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(f.Calls("cufftMakePlanMany64"), 2);  // made again in the new context
}

TEST(CudaLibraryRecovery, ConvolutionThatBreaksTheContextResetsIt) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kConv), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {Filled(ir::DType::kF32, {1, 2, 5, 5}), Filled(ir::DType::kF32, {4, 2, 3, 3})};
  auto first = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(FakeLibraries().convs.size(), 1u);
  EXPECT_EQ(f.Calls("cudnnCreate"), 1);
  f.BreakOnNextLibraryCall();
  FakeLibraries().conv_status = CUDNN_STATUS_EXECUTION_FAILED;
  auto broken = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kUnavailable) << broken.status().ToString();
  EXPECT_EQ(f.fake.context_resets(), 1);
  FakeLibraries().conv_status = CUDNN_STATUS_SUCCESS;
  auto again = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(f.Calls("cudnnCreate"), 2);
  const auto want = (*first)[0].literal().bytes();
  const auto got = (*again)[0].literal().bytes();
  EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin(), got.end()));
}

// cuFFT's work area comes from jitd's pool and counts against the client's
// quota: cuFFT allocates nothing itself (auto-allocation off), the work
// area it runs with is a pool allocation for the call, and a quota too
// small for arguments + arena + work area fails RESOURCE_EXHAUSTED naming
// the client.
TEST(CudaLibraryRecovery, FftWorkAreaComesFromThePoolAndTheQuota) {
  Fixture f;
  FakeLibraries().fft_work_bytes = 4096;
  auto exe = f.device->Compile(ParseOrFail(kFft), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {Filled(ir::DType::kC64, {4, 8})};
  ExecuteOptions roomy;
  roomy.device_memory = std::make_shared<MemoryAccount>("session 1", 1 << 20);
  ASSERT_TRUE((*exe)->Execute(args, roomy).ok());
  ASSERT_EQ(FakeLibraries().fft_execs.size(), 1u);
  EXPECT_FALSE(FakeLibraries().fft_execs[0].auto_allocation);
  EXPECT_NE(FakeLibraries().fft_execs[0].work_area, nullptr);
  EXPECT_GE(roomy.device_memory->peak_bytes(), 4096u + 2 * 4 * 8 * 8);  // work area + argument + result
  EXPECT_EQ(roomy.device_memory->bytes_in_use(), 0u);
  EXPECT_EQ(f.fake.live_allocations(), 0u);  // the work area went back
  // A quota with room for the argument and the result but not the work area.
  ExecuteOptions tight;
  tight.device_memory = std::make_shared<MemoryAccount>("session 2 (pid 7)", roomy.device_memory->peak_bytes() - 1);
  auto refused = (*exe)->Execute(args, tight);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("session 2 (pid 7)"), std::string::npos) << refused.status().message();
  EXPECT_EQ(tight.device_memory->bytes_in_use(), 0u);
}

}  // namespace
}  // namespace jitd::devices::cuda
