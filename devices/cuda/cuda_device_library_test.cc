// The cuda device's library calls over the fake driver and fake cuBLASLt /
// cuFFT tables (fake_libraries.h): a dot_general compiled to one cuBLASLt
// call runs on the session's stream with the arguments' device pointers
// and a pooled workspace, and the fake's host matmul from the recorded
// descriptors gives the row-major dot_general result (so the column-major
// mapping is checked end to end); an IRFFT over three axes runs copy ->
// cuFFT -> normalize; a cached program that calls a library this machine
// lacks is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_libraries.h"
#include "devices/cuda/fake_driver.h"
#include "devices/cuda/fake_libraries.h"
#include "devices/cuda/testing.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::devices::cuda {
namespace {

using frontend::testing::ParseOrFail;

using eval::RuntimeValue;

RuntimeValue F32(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  auto literal = ir::Literal::FromBytes(ir::Type::Tensor(ir::DType::kF32, dims), std::move(bytes));
  EXPECT_TRUE(literal.ok());
  return RuntimeValue(std::move(*literal));
}

struct Fixture {
  explicit Fixture(bool with_libraries = true) {
    ResetFakeLibraryLog();
    FakeLibraries().compute = true;
    libraries = CudaLibraries::ForTables(&FakeCublasLtSymbols(), &FakeCufftSymbols(), &FakeCudnnSymbols());
    auto opened = CudaRuntime::Open(fake.symbols());
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    runtime = std::move(*opened);
    testing::LibrariesForSmallProblems();
    device = CudaDevice::CreateForRuntime(runtime.get(), with_libraries ? libraries.get() : nullptr);
  }
  ~Fixture() {
    device.reset();
    runtime.reset();
  }
  FakeDriver fake;
  std::unique_ptr<CudaLibraries> libraries;
  std::unique_ptr<CudaRuntime> runtime;
  std::unique_ptr<CudaDevice> device;

  int Calls(const std::string& name) const {
    return static_cast<int>(std::count(FakeLibraries().calls.begin(), FakeLibraries().calls.end(), name));
  }
};

// lhs [2, 3, 4], rhs [2, 5, 4], contracting 2 x 2: the rhs is transposed in
// cuBLASLt's terms.
constexpr char kDot[] = R"(
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>) -> tensor<2x3x5xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [2], precision = [HIGHEST, HIGHEST] : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
})";

TEST(CudaDeviceLibraries, DotGeneralRunsAsOneCublasLtMatmul) {
  Fixture f;
  EXPECT_NE(f.device->libraries().find("cuBLASLt"), std::string::npos) << f.device->libraries();
  auto exe = f.device->Compile(ParseOrFail(kDot), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-4, 4);  // exact in f32 sums
  std::vector<float> a(2 * 3 * 4), b(2 * 5 * 4);
  for (float& x : a) x = static_cast<float>(small(rng));
  for (float& x : b) x = static_cast<float>(small(rng));
  std::vector<RuntimeValue> args = {F32({2, 3, 4}, a), F32({2, 5, 4}, b)};
  auto out = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(FakeLibraries().matmuls.size(), 1u);
  const FakeMatmulCall& call = FakeLibraries().matmuls[0];
  EXPECT_EQ(call.compute, CUBLAS_COMPUTE_32F);  // HIGHEST
  EXPECT_NE(call.stream, nullptr);
  EXPECT_NE(call.workspace, nullptr);  // from the pool, for the call
  EXPECT_EQ(call.workspace_bytes, 4096u);  // just what the heuristic's algorithm asked for
  auto heuristics = [] {
    return std::count(FakeLibraries().calls.begin(), FakeLibraries().calls.end(), "cublasLtMatmulAlgoGetHeuristic");
  };
  // Asked once, at the first execute: later calls run the same algorithm
  // (a heuristic query costs more on the host than a small call).
  EXPECT_EQ(heuristics(), 1);
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  EXPECT_EQ(heuristics(), 1);
  ASSERT_EQ(FakeLibraries().matmuls.size(), 2u);
  EXPECT_EQ(FakeLibraries().matmuls[1].workspace_bytes, 4096u);
  EXPECT_TRUE(f.fake.launched().empty());  // no kernel at all
  std::vector<float> got((*out)[0].literal().bytes().size() / 4);
  std::memcpy(got.data(), (*out)[0].literal().bytes().data(), got.size() * 4);
  ASSERT_EQ(got.size(), 2u * 3 * 5);
  for (int batch = 0; batch < 2; ++batch) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 5; ++j) {
        float want = 0;
        for (int k = 0; k < 4; ++k) want += a[(batch * 3 + i) * 4 + k] * b[(batch * 5 + j) * 4 + k];
        EXPECT_EQ(got[(batch * 3 + i) * 5 + j], want) << batch << " " << i << " " << j;
      }
    }
  }
  EXPECT_EQ(f.fake.live_allocations(), 0u);  // workspace and arena went back
}

// A dot whose lhs cuBLASLt does not read in place: the permute kernel
// (here a host stand-in on the fake driver, which runs no PTX) writes the
// scratch the matmul then reads.
TEST(CudaDeviceLibraries, PermutedDotRunsPermuteThenMatmul) {
  Fixture f;
  // lhs [k=4, b=2, m=3] batch {1} contracting {0}.
  f.fake.SetKernel("jitd_permute0", [](void** params, unsigned, unsigned) {
    const auto* in = reinterpret_cast<const float*>(*static_cast<CUdeviceptr*>(params[0]));
    auto* out = reinterpret_cast<float*>(*static_cast<CUdeviceptr*>(params[1]));
    for (int b = 0; b < 2; ++b) {
      for (int m = 0; m < 3; ++m) {
        for (int k = 0; k < 4; ++k) out[(b * 3 + m) * 4 + k] = in[(k * 2 + b) * 3 + m];
      }
    }
    return CUDA_SUCCESS;
  });
  auto exe = f.device->Compile(ParseOrFail(R"(
func.func @main(%a: tensor<4x2x3xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [1] x [0], contracting_dims = [0] x [1] : (tensor<4x2x3xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
})"),
                               CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<float> a(24), b(40);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  std::vector<RuntimeValue> args = {F32({4, 2, 3}, a), F32({2, 4, 5}, b)};
  auto out = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(f.fake.launched(), std::vector<std::string>{"jitd_permute0"});
  std::vector<float> got(30);
  std::memcpy(got.data(), (*out)[0].literal().bytes().data(), 120);
  for (int bb = 0; bb < 2; ++bb) {
    for (int m = 0; m < 3; ++m) {
      for (int n = 0; n < 5; ++n) {
        float want = 0;
        for (int k = 0; k < 4; ++k) want += a[(k * 2 + bb) * 3 + m] * b[(bb * 4 + k) * 5 + n];
        EXPECT_EQ(got[(bb * 3 + m) * 5 + n], want) << bb << " " << m << " " << n;
      }
    }
  }
}

TEST(CudaDeviceLibraries, ThreeAxisIrfftRunsCopyCufftNormalize) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(R"(
func.func @main(%x: tensor<2x3x4x5xcomplex<f32>>) -> tensor<2x3x4x8xf32> {
  %0 = stablehlo.fft %x, type = IRFFT, length = [3, 4, 8] : (tensor<2x3x4x5xcomplex<f32>>) -> tensor<2x3x4x8xf32>
  return %0 : tensor<2x3x4x8xf32>
})"),
                               CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<uint8_t> zeros(2 * 3 * 4 * 5 * 8);
  auto literal = ir::Literal::FromBytes(ir::Type::Tensor(ir::DType::kC64, {2, 3, 4, 5}), zeros);
  ASSERT_TRUE(literal.ok());
  std::vector<RuntimeValue> args = {RuntimeValue(std::move(*literal))};
  for (int round = 0; round < 2; ++round) ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  // Each round: the input copied, the transform, the division.
  const std::vector<std::string> launched = f.fake.launched();
  ASSERT_EQ(launched.size(), 4u);
  EXPECT_EQ(launched[0].rfind("jitd_copy", 0), 0u) << launched[0];
  EXPECT_EQ(launched[1].rfind("jitd_fft_normalize", 0), 0u) << launched[1];
  ASSERT_EQ(FakeLibraries().fft_plans.size(), 1u);  // made once, run twice
  EXPECT_EQ(FakeLibraries().fft_plans[0].type, CUFFT_C2R);
  ASSERT_EQ(FakeLibraries().fft_execs.size(), 2u);
  EXPECT_EQ(FakeLibraries().fft_execs[0].kind, "C2R");
  EXPECT_NE(FakeLibraries().fft_execs[0].input, FakeLibraries().fft_execs[0].output);
  EXPECT_NE(FakeLibraries().fft_execs[0].stream, nullptr);
}

// NCHW input, OIHW kernel: read in place; strides, padding, dilation and
// groups through the descriptors, checked by the fake's host convolution
// against a direct one here.
TEST(CudaDeviceLibraries, ConvolutionRunsAsOneCudnnCall) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(R"(
func.func @main(%x: tensor<2x4x7x6xf32>, %w: tensor<6x2x3x2xf32>) -> tensor<2x6x4x6xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 2]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>) -> tensor<2x6x4x6xf32>
  return %0 : tensor<2x6x4x6xf32>
})"),
                               CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<float> x(2 * 4 * 7 * 6), w(6 * 2 * 3 * 2);
  for (float& v : x) v = static_cast<float>(small(rng));
  for (float& v : w) v = static_cast<float>(small(rng));
  std::vector<RuntimeValue> args = {F32({2, 4, 7, 6}, x), F32({6, 2, 3, 2}, w)};
  auto out = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(FakeLibraries().convs.size(), 1u);
  const FakeConvCall& call = FakeLibraries().convs[0];
  EXPECT_EQ(call.groups, 2);
  EXPECT_EQ(call.mode, CUDNN_CROSS_CORRELATION);
  EXPECT_EQ(call.algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);  // the first ranked one that succeeds
  EXPECT_NE(call.stream, nullptr);
  EXPECT_TRUE(f.fake.launched().empty());
  std::vector<float> got(2 * 6 * 4 * 6);
  ASSERT_EQ((*out)[0].literal().bytes().size(), got.size() * 4);
  std::memcpy(got.data(), (*out)[0].literal().bytes().data(), got.size() * 4);
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 6; ++k) {
      for (int oy = 0; oy < 4; ++oy) {
        for (int ox = 0; ox < 6; ++ox) {
          float want = 0;
          const int g = k / 3;
          for (int c = 0; c < 2; ++c) {
            for (int ky = 0; ky < 3; ++ky) {
              for (int kx = 0; kx < 2; ++kx) {
                const int iy = oy * 2 - 1 + ky, ix = ox - 1 + kx * 2;
                if (iy < 0 || iy >= 7 || ix < 0 || ix >= 6) continue;
                want += x[((n * 4 + g * 2 + c) * 7 + iy) * 6 + ix] * w[((k * 2 + c) * 3 + ky) * 2 + kx];
              }
            }
          }
          EXPECT_EQ(got[((n * 6 + k) * 4 + oy) * 6 + ox], want) << n << " " << k << " " << oy << " " << ox;
        }
      }
    }
  }
  EXPECT_EQ(f.fake.live_allocations(), 0u);
}

constexpr char kSmallConv[] = R"(
func.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
})";

std::vector<RuntimeValue> SmallConvArgs() {
  std::vector<float> x(2 * 5 * 5), w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) - 2;
  return {F32({1, 2, 5, 5}, x), F32({3, 2, 3, 3}, w)};
}

// cuDNN's heuristic is asked once per step, at its first execute; later
// executes run the algorithm it chose with the workspace it asked for.
TEST(CudaDeviceLibraries, ConvolutionAlgorithmIsChosenOnce) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kSmallConv), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const std::vector<RuntimeValue> args = SmallConvArgs();
  auto first = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  for (int i = 0; i < 2; ++i) {
    auto again = (*exe)->Execute(args, ExecuteOptions{});
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    const auto want = (*first)[0].literal().bytes();
    const auto got = (*again)[0].literal().bytes();
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin(), got.end()));
  }
  EXPECT_EQ(f.Calls("cudnnGetConvolutionForwardAlgorithm_v7"), 1);
  ASSERT_EQ(FakeLibraries().convs.size(), 3u);
  for (const FakeConvCall& call : FakeLibraries().convs) {
    EXPECT_EQ(call.algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
    EXPECT_EQ(call.workspace_bytes, 2048u);  // what that algorithm asks for
  }
  EXPECT_EQ(f.Calls("cudnnCreate"), 1);  // one handle served the three in turn
  EXPECT_EQ(f.fake.live_allocations(), 0u);
}

// Two executes' convolutions run at the same time, each with a cuDNN handle
// of its own bound to its own stream: one client's convolutions never wait
// for another's (a single handle would make every client's calls take
// turns). The fake's convolution waits inside until both are there.
TEST(CudaDeviceLibraries, ConvolutionsOfTwoExecutesRunAtOnce) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kSmallConv), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const std::vector<RuntimeValue> args = SmallConvArgs();
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());  // the algorithm chosen
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0, most = 0;
  FakeLibraries().on_execute = [&](const std::string&) {
    std::unique_lock<std::mutex> lock(mu);
    most = std::max(most, ++inside);
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return inside >= 2 || most >= 2; });
    --inside;
  };
  std::vector<Status> ran(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] { ran[t] = (*exe)->Execute(args, ExecuteOptions{}).status(); });
  }
  for (std::thread& t : threads) t.join();
  FakeLibraries().on_execute = nullptr;
  for (const Status& s : ran) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(most, 2) << "the second convolution waited for the first to finish";
  ASSERT_EQ(FakeLibraries().convs.size(), 3u);
  EXPECT_NE(FakeLibraries().convs[1].stream, FakeLibraries().convs[2].stream);
  EXPECT_EQ(f.Calls("cudnnCreate"), 2);
  EXPECT_EQ(f.Calls("cudnnGetConvolutionForwardAlgorithm_v7"), 1);
}

// jax's NHWC / HWIO: the filter permuted by a kernel into a scratch first,
// the call reading that scratch; the tensors in place with NHWC strides.
TEST(CudaDeviceLibraries, HwioFiltersArePermutedFirst) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(R"(
func.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x5x5x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x5x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x5x5x4xf32>
  return %0 : tensor<1x5x5x4xf32>
})"),
                               CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  FakeLibraries().compute = false;  // the fake driver does not run the permute kernel
  std::vector<float> x(50), w(72);
  std::vector<RuntimeValue> args = {F32({1, 5, 5, 2}, x), F32({3, 3, 2, 4}, w)};
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  EXPECT_EQ(f.fake.launched(), std::vector<std::string>{"jitd_permute0"});
  ASSERT_EQ(FakeLibraries().convs.size(), 1u);
  const FakeConvCall& call = FakeLibraries().convs[0];
  EXPECT_EQ(call.w_dims, (std::vector<int>{4, 2, 3, 3}));
  EXPECT_EQ(call.x.strides, (std::vector<int>{50, 1, 10, 2}));
  EXPECT_EQ(call.y.strides, (std::vector<int>{100, 1, 20, 4}));
  EXPECT_EQ(call.w_format, CUDNN_TENSOR_NCHW);
}

TEST(CudaDeviceLibraries, ACachedProgramCallingAMissingLibraryIsRefused) {
  std::string bytes;
  {
    Fixture with;
    auto exe = with.device->Compile(ParseOrFail(kDot), CompileOptions{});
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    auto serialized = with.device->Serialize(**exe);
    ASSERT_TRUE(serialized.ok()) << serialized.status().ToString();
    bytes = *serialized;
    // The compile target says libraries were on: a cache keyed by it
    // does not hand this program to a device without them.
    EXPECT_NE(with.device->compile_target().find("cublaslt"), std::string::npos) << with.device->compile_target();
  }
  Fixture without(/*with_libraries=*/false);
  EXPECT_EQ(without.device->compile_target().find("cublaslt"), std::string::npos);
  auto loaded = without.device->Deserialize(bytes);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(loaded.status().message().find("calls cuBLASLt"), std::string::npos) << loaded.status().message();
  // Compiled here, the same program uses the exact kernel instead.
  auto own = without.device->Compile(ParseOrFail(kDot), CompileOptions{});
  ASSERT_TRUE(own.ok()) << own.status().ToString();
}

}  // namespace
}  // namespace jitd::devices::cuda
