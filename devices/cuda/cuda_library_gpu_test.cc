// cuBLASLt and cuFFT through the cuda device on a real GPU (ctest label
// `gpu`): skipped, saying why, where no GPU, driver or library is found.
// Dots against a host reference in double per precision mode (HIGHEST and
// --cuda-exact-f32 tight, DEFAULT within TF32's error), f64 and bf16 dots;
// ffts against a direct DFT, and RFFT -> IRFFT over three axes back to the
// input; a cuDNN convolution against a direct one; convolutions cuDNN
// refuses through im2col + cuBLASLt against jit/eval; the cholesky kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <random>
#include <vector>

#include "devices/cuda/cuda_device.h"
#include "devices/cuda/testing.h"
#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"

namespace jitd::devices::cuda {
namespace {

// The cuda device when it can run library calls, else the reason to skip.
std::unique_ptr<CudaDevice> DeviceOrSkipReason(std::string* why, const char* library) {
  testing::LibrariesForSmallProblems();
  auto device = CudaDevice::Create();
  if (!device.ok()) {
    *why = "no GPU test: " + device.status().message();
    return nullptr;
  }
  const std::string libraries = (*device)->libraries();
  const size_t at = libraries.find(library);
  if (at == std::string::npos || libraries.compare(at + std::strlen(library), 7, " absent") == 0) {
    *why = std::string("no ") + library + " on this machine: " + libraries;
    return nullptr;
  }
  return std::move(*device);
}

std::unique_ptr<Executable> CompileOrFail(CudaDevice& device, const std::string& text) {
  auto module = frontend::ParseModule(text);
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return nullptr;
  auto exe = device.Compile(std::shared_ptr<const ir::Module>(std::move(*module)));
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  return exe.ok() ? std::move(*exe) : nullptr;
}

std::string DotProgram(const std::string& type, const std::string& out_type, const std::string& precision) {
  return "func.func @main(%a: tensor<3x64x96x" + type + ">, %b: tensor<3x96x80x" + type + ">) -> tensor<3x64x80x" +
         out_type + "> {\n  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]" +
         precision + " : (tensor<3x64x96x" + type + ">, tensor<3x96x80x" + type + ">) -> tensor<3x64x80x" + out_type +
         ">\n  return %0 : tensor<3x64x80x" + out_type + ">\n}";
}

// Largest |got - want| / (|a| . |b|) over the result, the reference in double.
template <typename T, typename Out>
double DotError(const std::vector<T>& a, const std::vector<T>& b, const std::vector<Out>& got,
                double (*to_double)(T), double (*out_double)(Out)) {
  double worst = 0;
  for (int batch = 0; batch < 3; ++batch) {
    for (int i = 0; i < 64; ++i) {
      for (int j = 0; j < 80; ++j) {
        double want = 0, scale = 0;
        for (int k = 0; k < 96; ++k) {
          const double x = to_double(a[(batch * 64 + i) * 96 + k]);
          const double y = to_double(b[(batch * 96 + k) * 80 + j]);
          want += x * y;
          scale += std::fabs(x * y);
        }
        worst = std::max(worst, std::fabs(out_double(got[(batch * 64 + i) * 80 + j]) - want) / std::max(scale, 1e-30));
      }
    }
  }
  return worst;
}

double F32ToDouble(float x) { return x; }
double F64ToDouble(double x) { return x; }
uint16_t ToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return static_cast<uint16_t>(bits >> 16);  // exactly representable inputs below
}
double Bf16ToDouble(uint16_t x) {
  const uint32_t bits = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
std::vector<T> RandomValues(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<T> out(n);
  for (T& x : out) x = static_cast<T>(d(rng));
  return out;
}

TEST(CudaLibraryGpu, F32DotPerPrecision) {
  std::string why;
  auto device = DeviceOrSkipReason(&why, "cuBLASLt");
  if (!device) GTEST_SKIP() << why;
  std::mt19937 rng(1);
  const std::vector<float> a = RandomValues<float>(3 * 64 * 96, rng), b = RandomValues<float>(3 * 96 * 80, rng);
  std::vector<float> c(3 * 64 * 80);
  const void* in[] = {a.data(), b.data()};
  void* out[] = {c.data()};
  // HIGHEST: exact f32 (error of f32 rounding only).
  auto highest = CompileOrFail(*device, DotProgram("f32", "f32", ", precision = [HIGHEST, HIGHEST]"));
  ASSERT_NE(highest, nullptr);
  ASSERT_TRUE(highest->Run(in, out, ExecuteOptions{}).ok());
  const double exact_error = DotError(a, b, c, F32ToDouble, F32ToDouble);
  EXPECT_LT(exact_error, 1e-5);
  // DEFAULT: TF32 allowed (10-bit mantissas: ~1e-3 relative).
  auto fast = CompileOrFail(*device, DotProgram("f32", "f32", ""));
  ASSERT_NE(fast, nullptr);
  ASSERT_TRUE(fast->Run(in, out, ExecuteOptions{}).ok());
  const double fast_error = DotError(a, b, c, F32ToDouble, F32ToDouble);
  EXPECT_LT(fast_error, 5e-3);
  // --cuda-exact-f32: DEFAULT exact too.
  CudaDeviceSettings settings = GetCudaDeviceSettings();
  settings.exact_f32 = true;
  SetCudaDeviceSettings(settings);
  auto exact = CompileOrFail(*device, DotProgram("f32", "f32", ""));
  settings.exact_f32 = false;
  SetCudaDeviceSettings(settings);
  ASSERT_NE(exact, nullptr);
  ASSERT_TRUE(exact->Run(in, out, ExecuteOptions{}).ok());
  EXPECT_LT(DotError(a, b, c, F32ToDouble, F32ToDouble), 1e-5);
  std::printf("f32 dot 3 x [64x96 * 96x80]: HIGHEST error %.3g, DEFAULT (TF32) error %.3g\n", exact_error,
              fast_error);
}

TEST(CudaLibraryGpu, F64AndBf16Dots) {
  std::string why;
  auto device = DeviceOrSkipReason(&why, "cuBLASLt");
  if (!device) GTEST_SKIP() << why;
  std::mt19937 rng(2);
  const std::vector<double> a = RandomValues<double>(3 * 64 * 96, rng), b = RandomValues<double>(3 * 96 * 80, rng);
  std::vector<double> c(3 * 64 * 80);
  auto f64 = CompileOrFail(*device, DotProgram("f64", "f64", ""));
  ASSERT_NE(f64, nullptr);
  const void* in[] = {a.data(), b.data()};
  void* out[] = {c.data()};
  ASSERT_TRUE(f64->Run(in, out, ExecuteOptions{}).ok());
  EXPECT_LT(DotError(a, b, c, F64ToDouble, F64ToDouble), 1e-13);

  // bf16 operands (small integers: exact), an f32 result accumulated in f32.
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<uint16_t> ha(3 * 64 * 96), hb(3 * 96 * 80);
  for (uint16_t& x : ha) x = ToBf16(static_cast<float>(small(rng)));
  for (uint16_t& x : hb) x = ToBf16(static_cast<float>(small(rng)));
  std::vector<float> hc(3 * 64 * 80);
  auto bf16 = CompileOrFail(*device, DotProgram("bf16", "f32", ""));
  ASSERT_NE(bf16, nullptr);
  const void* hin[] = {ha.data(), hb.data()};
  void* hout[] = {hc.data()};
  ASSERT_TRUE(bf16->Run(hin, hout, ExecuteOptions{}).ok());
  EXPECT_EQ(DotError(ha, hb, hc, Bf16ToDouble, F32ToDouble), 0.0);  // integer sums below 2^24
}

TEST(CudaLibraryGpu, FftsMatchADirectDft) {
  std::string why;
  auto device = DeviceOrSkipReason(&why, "cuFFT");
  if (!device) GTEST_SKIP() << why;
  using C = std::complex<float>;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<C> x(2 * 4 * 8);
  for (C& v : x) v = C(d(rng), d(rng));
  auto exe = CompileOrFail(*device, R"(
func.func @main(%x: tensor<2x4x8xcomplex<f32>>) -> tensor<2x4x8xcomplex<f32>> {
  %0 = stablehlo.fft %x, type = FFT, length = [4, 8] : (tensor<2x4x8xcomplex<f32>>) -> tensor<2x4x8xcomplex<f32>>
  return %0 : tensor<2x4x8xcomplex<f32>>
})");
  ASSERT_NE(exe, nullptr);
  std::vector<C> y(x.size());
  const void* in[] = {x.data()};
  void* out[] = {y.data()};
  ASSERT_TRUE(exe->Run(in, out, ExecuteOptions{}).ok());
  double worst = 0;
  for (int b = 0; b < 2; ++b) {
    for (int k0 = 0; k0 < 4; ++k0) {
      for (int k1 = 0; k1 < 8; ++k1) {
        std::complex<double> want = 0;
        for (int j0 = 0; j0 < 4; ++j0) {
          for (int j1 = 0; j1 < 8; ++j1) {
            const double angle = -2 * M_PI * (static_cast<double>(j0 * k0) / 4 + static_cast<double>(j1 * k1) / 8);
            want += std::complex<double>(x[(b * 4 + j0) * 8 + j1]) * std::polar(1.0, angle);
          }
        }
        worst = std::max(worst, std::abs(std::complex<double>(y[(b * 4 + k0) * 8 + k1]) - want));
      }
    }
  }
  EXPECT_LT(worst, 1e-4);
}

TEST(CudaLibraryGpu, RfftThenIrfftOverThreeAxesIsTheInput) {
  std::string why;
  auto device = DeviceOrSkipReason(&why, "cuFFT");
  if (!device) GTEST_SKIP() << why;
  auto exe = CompileOrFail(*device, R"(
func.func @main(%x: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %0 = stablehlo.fft %x, type = RFFT, length = [3, 4, 8] : (tensor<2x3x4x8xf32>) -> tensor<2x3x4x5xcomplex<f32>>
  %1 = stablehlo.fft %0, type = IRFFT, length = [3, 4, 8] : (tensor<2x3x4x5xcomplex<f32>>) -> tensor<2x3x4x8xf32>
  return %1 : tensor<2x3x4x8xf32>
})");
  ASSERT_NE(exe, nullptr);
  std::mt19937 rng(4);
  const std::vector<float> x = RandomValues<float>(2 * 3 * 4 * 8, rng);
  std::vector<float> y(x.size());
  const void* in[] = {x.data()};
  void* out[] = {y.data()};
  ASSERT_TRUE(exe->Run(in, out, ExecuteOptions{}).ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-5) << i;
}

// cuDNN: an NHWC / HWIO convolution (the filter permuted first) with
// groups, stride, padding and dilation against a direct one in double
// (--cuda-exact-f32: no TF32).
TEST(CudaLibraryGpu, ConvolutionMatchesADirectOne) {
  std::string why;
  auto device = DeviceOrSkipReason(&why, "cuDNN");
  if (!device) GTEST_SKIP() << why;
  // Exact f32 (no TF32) for a tight comparison.
  CudaDeviceSettings settings = GetCudaDeviceSettings();
  settings.exact_f32 = true;
  SetCudaDeviceSettings(settings);
  auto exe = CompileOrFail(*device, R"(
func.func @main(%x: tensor<2x9x8x4xf32>, %w: tensor<3x3x2x6xf32>) -> tensor<2x5x8x6xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 1], pad = [[1, 1], [2, 2]], rhs_dilate = [1, 2]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x9x8x4xf32>, tensor<3x3x2x6xf32>) -> tensor<2x5x8x6xf32>
  return %0 : tensor<2x5x8x6xf32>
})");
  settings.exact_f32 = false;
  SetCudaDeviceSettings(settings);
  ASSERT_NE(exe, nullptr);
  std::mt19937 rng(6);
  const std::vector<float> x = RandomValues<float>(2 * 9 * 8 * 4, rng), w = RandomValues<float>(3 * 3 * 2 * 6, rng);
  std::vector<float> y(2 * 5 * 8 * 6);
  const void* in[] = {x.data(), w.data()};
  void* out[] = {y.data()};
  ASSERT_TRUE(exe->Run(in, out, ExecuteOptions{}).ok());
  for (int n = 0; n < 2; ++n) {
    for (int oy = 0; oy < 5; ++oy) {
      for (int ox = 0; ox < 8; ++ox) {
        for (int k = 0; k < 6; ++k) {
          double want = 0;
          const int g = k / 3;
          for (int ky = 0; ky < 3; ++ky) {
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = oy * 2 - 1 + ky, ix = ox - 2 + kx * 2;
              if (iy < 0 || iy >= 9 || ix < 0 || ix >= 8) continue;
              for (int c = 0; c < 2; ++c) {
                want += static_cast<double>(x[((n * 9 + iy) * 8 + ix) * 4 + g * 2 + c]) *
                        w[((ky * 3 + kx) * 2 + c) * 6 + k];
              }
            }
          }
          EXPECT_NEAR(y[((n * 5 + oy) * 8 + ox) * 6 + k], want, 1e-5) << n << " " << oy << " " << ox << " " << k;
        }
      }
    }
  }
}

// Convolutions cuDNN refuses (lhs dilation, window reversal, negative and
// asymmetric padding, batch groups) run as im2col + a cuBLASLt matmul
// (im2col_plan.h): the im2col kernel on the GPU, against jit/eval.
TEST(CudaLibraryGpu, Im2colConvolutionsMatchTheInterpreter) {
  std::string why;
  auto device = DeviceOrSkipReason(&why, "cuBLASLt");
  if (!device) GTEST_SKIP() << why;
  const char* programs[] = {
      R"(func.func @main(%lhs: tensor<1x2x4x3xf32>, %rhs: tensor<3x2x2x2xf32>) -> tensor<1x3x7x3xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 2], pad = [[1, 0], [2, 1]], lhs_dilate = [2, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x4x3xf32>, tensor<3x2x2x2xf32>) -> tensor<1x3x7x3xf32>
  return %0 : tensor<1x3x7x3xf32>
})",
      R"(func.func @main(%lhs: tensor<2x3x9xf32>, %rhs: tensor<2x3x3xf32>) -> tensor<2x2x6xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {pad = [[-1, 2]], rhs_dilate = [2], reverse = [true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x9xf32>, tensor<2x3x3xf32>) -> tensor<2x2x6xf32>
  return %0 : tensor<2x2x6xf32>
})",
      R"(func.func @main(%lhs: tensor<2x7x4xf32>, %rhs: tensor<3x2x6xf32>) -> tensor<6x2x6xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, f]x[0, i, o]->[f, b, 0], window = {pad = [[0, 1]], stride = [1]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x7x4xf32>, tensor<3x2x6xf32>) -> tensor<6x2x6xf32>
  return %0 : tensor<6x2x6xf32>
})",
      R"(func.func @main(%lhs: tensor<4x3x5xf64>, %rhs: tensor<4x3x2xf64>) -> tensor<2x4x4xf64> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<4x3x5xf64>, tensor<4x3x2xf64>) -> tensor<2x4x4xf64>
  return %0 : tensor<2x4x4xf64>
})",
  };
  CudaDeviceSettings settings = GetCudaDeviceSettings();
  settings.exact_f32 = true;
  SetCudaDeviceSettings(settings);
  for (const char* text : programs) {
    SCOPED_TRACE(text);
    auto module = frontend::ParseModule(text);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    std::shared_ptr<const ir::Module> shared(std::move(*module));
    auto exe = device->Compile(shared);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    const ir::Function& main = *shared->FindFunction("main");
    const ir::Op& conv = *main.entry()->ops().front();
    auto lhs = eval::RandomLiteral(conv.operand(0)->type(), 3);
    auto rhs = eval::RandomLiteral(conv.operand(1)->type(), 4);
    ASSERT_TRUE(lhs.ok() && rhs.ok());
    const ir::Type& out_type = conv.result(0)->type();
    std::vector<uint8_t> got(static_cast<size_t>(out_type.byte_size()));
    const void* in[] = {lhs->bytes().data(), rhs->bytes().data()};
    void* out[] = {got.data()};
    ASSERT_TRUE((*exe)->Run(in, out, ExecuteOptions{}).ok());
    std::vector<eval::RuntimeValue> args;
    args.emplace_back(std::move(*lhs));
    args.emplace_back(std::move(*rhs));
    auto want = eval::EvaluateFunction(*shared, main, std::move(args));
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    const auto bytes = (*want)[0].literal().bytes();
    ASSERT_EQ(bytes.size(), got.size());
    const bool f64 = out_type.dtype() == ir::DType::kF64;
    for (int64_t i = 0; i < out_type.num_elements(); ++i) {
      double w, g;
      if (f64) {
        std::memcpy(&w, bytes.data() + 8 * i, 8);
        std::memcpy(&g, got.data() + 8 * i, 8);
      } else {
        float wf, gf;
        std::memcpy(&wf, bytes.data() + 4 * i, 4);
        std::memcpy(&gf, got.data() + 4 * i, 4);
        w = wf;
        g = gf;
      }
      ASSERT_NEAR(g, w, (f64 ? 1e-12 : 1e-5) * (1 + std::fabs(w))) << "element " << i;
    }
  }
  settings.exact_f32 = false;
  SetCudaDeviceSettings(settings);
}

// Not a library: cholesky's own kernel, against the factor it must give
// (l l^T = a for a = m m^T + n I), lower and upper.
TEST(CudaLibraryGpu, CholeskyKernelFactors) {
  auto device = CudaDevice::Create();
  if (!device.ok()) GTEST_SKIP() << "no GPU test: " << device.status().message();
  constexpr int n = 24;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> m(n * n), a(2 * n * n, 0.0);
  for (double& x : m) x = d(rng);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = i == j ? n : 0.0;
      for (int k = 0; k < n; ++k) s += m[i * n + k] * m[j * n + k];
      a[i * n + j] = a[n * n + i * n + j] = s;
    }
  }
  for (bool lower : {true, false}) {
    auto exe = CompileOrFail(**device, std::string(R"(
func.func @main(%a: tensor<2x24x24xf64>) -> tensor<2x24x24xf64> {
  %0 = "stablehlo.cholesky"(%a) {lower = )") + (lower ? "true" : "false") + R"(} : (tensor<2x24x24xf64>) -> tensor<2x24x24xf64>
  return %0 : tensor<2x24x24xf64>
})");
    ASSERT_NE(exe, nullptr);
    std::vector<double> l(a.size());
    const void* in[] = {a.data()};
    void* out[] = {l.data()};
    ASSERT_TRUE(exe->Run(in, out, ExecuteOptions{}).ok());
    for (int b = 0; b < 2; ++b) {
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          const double got = l[b * n * n + i * n + j];
          if (lower ? j > i : j < i) {
            EXPECT_EQ(got, 0.0);
            continue;
          }
          // (l l^T)[i][j] (lower) or (u^T u)[i][j] (upper) against a.
          double s = 0;
          for (int k = 0; k < n; ++k) {
            s += lower ? l[b * n * n + i * n + k] * l[b * n * n + j * n + k]
                       : l[b * n * n + k * n + i] * l[b * n * n + k * n + j];
          }
          EXPECT_NEAR(s, a[b * n * n + i * n + j], 1e-10) << lower << " " << b << " " << i << " " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace jitd::devices::cuda
