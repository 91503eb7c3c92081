// CompileProgram's flatten_signature on the cuda device (issue 16): a program
// with tuples and tokens in its signature, which the cuda compiler refuses
// as written, compiles offline once flattened and runs on raw buffers (over
// the fake driver, whose kernels the test writes on the host).
#include <gtest/gtest.h>

#include <cstring>

#include "devices/compile.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/fake_driver.h"
#include "jit/frontend/parser.h"

namespace jitd::devices {
namespace {

constexpr char kTuples[] = R"(
func.func @main(%p: tuple<tensor<4xf32>, tensor<4xf32>>, %k: !stablehlo.token) -> (tuple<tensor<4xf32>, tuple<>>, !stablehlo.token) {
  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
  %b = stablehlo.get_tuple_element %p[1] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
  %s = stablehlo.add %a, %b : tensor<4xf32>
  %e = stablehlo.tuple : tuple<>
  %t = stablehlo.tuple %s, %e : tuple<tensor<4xf32>, tuple<>>
  return %t, %k : tuple<tensor<4xf32>, tuple<>>, !stablehlo.token
}
)";

TEST(CompileCudaTuples, FlattenedSignaturesCompileAndRunOnBuffers) {
  cuda::FakeDriver fake;
  auto runtime = cuda::CudaRuntime::Open(fake.symbols());
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  std::unique_ptr<cuda::CudaDevice> device = cuda::CudaDevice::CreateForRuntime(runtime->get());

  // As written: the cuda compiler takes tensors only.
  auto as_written = frontend::ParseModule(kTuples);
  ASSERT_TRUE(as_written.ok()) << as_written.status().ToString();
  auto refused = CompileProgram(*device, std::move(as_written).value());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("tokens and tuples"), std::string::npos)
      << refused.status().ToString();

  auto module = frontend::ParseModule(kTuples);
  ASSERT_TRUE(module.ok());
  ProgramCompileOptions options;
  options.flatten_signature = true;
  std::vector<CompileStep> steps;
  options.steps = &steps;
  auto exe = CompileProgram(*device, std::move(module).value(), options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  bool flattened = false;
  for (const CompileStep& step : steps) flattened |= step.name == "flatten-signature";
  EXPECT_TRUE(flattened);
  const ir::Type f32x4 = ir::Type::Tensor(ir::DType::kF32, {4});
  EXPECT_EQ((*exe)->argument_types(), (std::vector<ir::Type>{f32x4, f32x4}));
  EXPECT_EQ((*exe)->result_types(), (std::vector<ir::Type>{f32x4}));
  ASSERT_TRUE((*exe)->runs_on_buffers());

  fake.SetKernel("jitd_k0", [](void** params, unsigned, unsigned) {
    auto at = [&](int i) { return reinterpret_cast<float*>(*static_cast<CUdeviceptr*>(params[i])); };
    for (int i = 0; i < 4; ++i) at(2)[i] = at(0)[i] + at(1)[i];
    return CUDA_SUCCESS;
  });
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, out[4] = {};
  const void* in[] = {a, b};
  void* res[] = {out};
  Status run = (*exe)->Run(in, res, ExecuteOptions{});
  ASSERT_TRUE(run.ok()) << run.ToString();
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(fake.launched(), std::vector<std::string>{"jitd_k0"});
}

}  // namespace
}  // namespace jitd::devices
