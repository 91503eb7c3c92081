// The im2col + cuBLASLt convolution through the cuda device over the fake
// driver, with no cuDNN: the program's steps run in order on the session's
// stream with the arena's buffers — the im2col and permute kernels as host
// stand-ins computing what the emitted kernels compute (Im2colSource, the
// permutations of the plan; the fake driver runs no PTX), the matmul by the
// fake cuBLASLt from its descriptors — and the result is jit/eval's. This
// checks the compiler's wiring of the steps (buffers, their order, arena
// reuse between temporaries), not the kernels' IR (a GPU test does).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_libraries.h"
#include "devices/cuda/fake_driver.h"
#include "devices/cuda/fake_libraries.h"
#include "devices/cuda/im2col_plan.h"
#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"

namespace jitd::devices::cuda {
namespace {

using eval::RuntimeValue;

const char* const kPrograms[] = {
    R"(func.func @main(%lhs: tensor<1x2x4x3xf32>, %rhs: tensor<3x2x2x2xf32>) -> tensor<1x3x7x3xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 2], pad = [[1, 0], [2, 1]], lhs_dilate = [2, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x4x3xf32>, tensor<3x2x2x2xf32>) -> tensor<1x3x7x3xf32>
  return %0 : tensor<1x3x7x3xf32>
})",
    R"(func.func @main(%lhs: tensor<2x6x4xf32>, %rhs: tensor<3x2x6xf32>) -> tensor<6x2x6xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, f]x[0, i, o]->[f, b, 0], window = {pad = [[1, 1]], rhs_dilate = [1], reverse = [true]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x6x4xf32>, tensor<3x2x6xf32>) -> tensor<6x2x6xf32>
  return %0 : tensor<6x2x6xf32>
})",
    R"(func.func @main(%lhs: tensor<4x3x5xf64>, %rhs: tensor<4x3x2xf64>) -> tensor<2x4x4xf64> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<4x3x5xf64>, tensor<4x3x2xf64>) -> tensor<2x4x4xf64>
  return %0 : tensor<2x4x4xf64>
})",
    // NHWC / HWIO with one group: the product is already in the result's
    // layout (no permute after the matmul); asymmetric, negative padding.
    R"(func.func @main(%lhs: tensor<2x5x5x3xf32>, %rhs: tensor<3x3x3x4xf32>) -> tensor<2x5x5x4xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[2, 0], [-1, 3]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x5x5x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x5x5x4xf32>
  return %0 : tensor<2x5x5x4xf32>
})",
};

// What a permute kernel computes: result dimension k is dims[perm[k]].
void HostPermute(const uint8_t* in, uint8_t* out, int64_t element, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& perm) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, source = 0;
    for (size_t k = perm.size(); k-- > 0;) {
      const int64_t extent = dims[static_cast<size_t>(perm[k])];
      source += (rest % extent) * strides[static_cast<size_t>(perm[k])];
      rest /= extent;
    }
    std::memcpy(out + i * element, in + source * element, static_cast<size_t>(element));
  }
}

template <typename T>
T* Param(void** params, int i) {
  return reinterpret_cast<T*>(*static_cast<CUdeviceptr*>(params[i]));
}

TEST(CudaDeviceIm2col, ConvolutionsWithoutCudnnMatchTheInterpreter) {
  ResetFakeLibraryLog();
  FakeLibraries().compute = true;
  auto libraries = CudaLibraries::ForTables(&FakeCublasLtSymbols(), &FakeCufftSymbols(), /*cudnn=*/nullptr);
  FakeDriver fake;
  auto runtime = CudaRuntime::Open(fake.symbols());
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  CudaDeviceSettings settings = GetCudaDeviceSettings();
  settings.exact_f32 = true;
  settings.library_min_multiply_adds = 0;  // the corpus-sized convolutions through im2col
  SetCudaDeviceSettings(settings);
  auto device = CudaDevice::CreateForRuntime(runtime->get(), libraries.get());
  for (const char* text : kPrograms) {
    SCOPED_TRACE(text);
    auto parsed = frontend::ParseModule(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    std::shared_ptr<const ir::Module> module(std::move(*parsed));
    const ir::Function& main = *module->FindFunction("main");
    const ir::Op& conv = *main.entry()->ops().front();
    StatusOr<Im2colConvPlan> plan = PlanIm2colConvolution(conv, true);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    const Im2colConvPlan p = *plan;
    const ir::Type kernel_type = conv.operand(1)->type();
    fake.SetKernel("jitd_im2col0", [p](void** params, unsigned, unsigned) {
      const auto* in = Param<const uint8_t>(params, 0);
      auto* out = Param<uint8_t>(params, 1);
      for (int64_t i = 0; i < p.patch_elements; ++i) {
        const int64_t from = Im2colSource(p, i);
        if (from < 0) {
          std::memset(out + i * p.element_bytes, 0, static_cast<size_t>(p.element_bytes));
        } else {
          std::memcpy(out + i * p.element_bytes, in + from * p.element_bytes, static_cast<size_t>(p.element_bytes));
        }
      }
      return CUDA_SUCCESS;
    });
    // The permutes, in the order the compiler emits them: the filter's
    // (when it is not [O, I, taps]), then the product's (when it is not in
    // the result's layout).
    std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> permutes;
    if (!p.filter_permutation.empty()) permutes.push_back({kernel_type.dims(), p.filter_permutation});
    if (!p.output_permutation.empty()) permutes.push_back({p.gemm_dims, p.output_permutation});
    for (size_t k = 0; k < permutes.size(); ++k) {
      fake.SetKernel("jitd_permute" + std::to_string(k), [p, perm = permutes[k]](void** params, unsigned, unsigned) {
        HostPermute(Param<const uint8_t>(params, 0), Param<uint8_t>(params, 1), p.element_bytes, perm.first,
                    perm.second);
        return CUDA_SUCCESS;
      });
    }
    auto exe = device->Compile(module, CompileOptions{});
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    auto lhs = eval::RandomLiteral(conv.operand(0)->type(), 21);
    auto rhs = eval::RandomLiteral(kernel_type, 22);
    ASSERT_TRUE(lhs.ok() && rhs.ok());
    std::vector<RuntimeValue> args;
    args.emplace_back(*lhs);
    args.emplace_back(*rhs);
    const size_t matmuls_before = FakeLibraries().matmuls.size();
    const size_t launches_before = fake.launched().size();
    auto got = (*exe)->Execute(args, ExecuteOptions{});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(FakeLibraries().matmuls.size(), matmuls_before + 1);
    EXPECT_EQ(fake.launched().size(), launches_before + 1 + permutes.size());
    EXPECT_EQ(fake.launched()[launches_before], "jitd_im2col0");
    auto want = eval::EvaluateFunction(*module, main, std::move(args));
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    const auto w = (*want)[0].literal().bytes();
    const auto g = (*got)[0].literal().bytes();
    ASSERT_EQ(w.size(), g.size());
    const bool f64 = p.element_bytes == 8;
    for (size_t i = 0; i < w.size() / static_cast<size_t>(p.element_bytes); ++i) {
      double a, b;
      if (f64) {
        std::memcpy(&a, w.data() + 8 * i, 8);
        std::memcpy(&b, g.data() + 8 * i, 8);
      } else {
        float af, bf;
        std::memcpy(&af, w.data() + 4 * i, 4);
        std::memcpy(&bf, g.data() + 4 * i, 4);
        a = af;
        b = bf;
      }
      ASSERT_NEAR(b, a, (f64 ? 1e-12 : 1e-5) * (1 + std::fabs(a))) << "element " << i;
    }
  }
  settings.exact_f32 = false;
  settings.library_min_multiply_adds = kLibraryMinMultiplyAdds;
  SetCudaDeviceSettings(settings);
  device.reset();
}

}  // namespace
}  // namespace jitd::devices::cuda
