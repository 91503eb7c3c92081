// The last PTX -> cubin path: with neither nvJitLink nor ptxas, the cuda
// device compiles to PTX only and the runtime loads that PTX through the
// driver's JIT (cuModuleLoadData of the PTX text), saying so
// (CudaDevice::ptx_assembly, the log, jitd stats). Over the fake driver,
// which takes PTX images (their .entry names are the kernels).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_program.h"
#include "devices/cuda/fake_driver.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::devices::cuda {
namespace {

using frontend::testing::ParseOrFail;

constexpr char kAdd[] = R"(
func.func @main(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %0 = stablehlo.add %a, %b : tensor<16xf32>
  %1 = stablehlo.multiply %0, %a : tensor<16xf32>
  return %1 : tensor<16xf32>
})";

// Sets an environment variable for the scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CudaDriverJit, WithoutAnAssemblerPtxGoesToTheDriver) {
  ScopedEnv which("JITD_PTX_ASSEMBLER", "ptxas");
  ScopedEnv ptxas("JITD_PTXAS", "/nonexistent/jitd-test/ptxas");
  FakeDriver fake;
  auto runtime = CudaRuntime::Open(fake.symbols());
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  auto device = CudaDevice::CreateForRuntime(runtime->get());
  const std::string path = device->ptx_assembly();
  EXPECT_NE(path.find("driver's JIT"), std::string::npos) << path;
  EXPECT_NE(path.find("ptxas not found"), std::string::npos) << path;  // and why
  EXPECT_NE(device->compile_target().find("ptx-only"), std::string::npos) << device->compile_target();
  auto exe = device->Compile(ParseOrFail(kAdd), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  // What was loaded is the PTX: the program carries no cubin.
  auto bytes = device->Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto program = DeserializeCudaProgram(*bytes);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_TRUE(program->cubin.empty());
  EXPECT_NE(program->ptx.find(".entry "), std::string::npos);
  EXPECT_GE(fake.calls("cuModuleLoadData"), 1);
  // It runs: the kernel the PTX names is launched.
  std::vector<float> a(16, 1.0f), b(16, 2.0f), out(16);
  const void* in[] = {a.data(), b.data()};
  void* results[] = {out.data()};
  ASSERT_TRUE((*exe)->Run(in, results, ExecuteOptions{}).ok());
  ASSERT_EQ(fake.launched().size(), 1u);
  EXPECT_NE(program->ptx.find(".entry " + fake.launched()[0]), std::string::npos) << fake.launched()[0];
}

TEST(CudaDriverJit, WithAnAssemblerItIsNamed) {
  FakeDriver fake;
  auto runtime = CudaRuntime::Open(fake.symbols());
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  auto device = CudaDevice::CreateForRuntime(runtime->get());
  const std::string path = device->ptx_assembly();
  if (path.find("driver's JIT") != std::string::npos) GTEST_SKIP() << "no assembler on this machine: " << path;
  EXPECT_TRUE(path.find("nvjitlink ") == 0 || path.find("ptxas ") == 0) << path;
  EXPECT_TRUE(path.find("(in process)") != std::string::npos || path.find("(subprocess)") != std::string::npos)
      << path;
}

}  // namespace
}  // namespace jitd::devices::cuda
