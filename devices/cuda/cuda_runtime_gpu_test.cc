// CudaRuntime on a real GPU (ctest label `gpu`): skipped, saying why, where
// no driver or no GPU is found. Kernels are hand-written PTX, which the
// driver JIT-compiles in cuModuleLoadData, so this test needs no compiler.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_runtime.h"
#include "devices/cuda/cuda_symbols.h"
#include "jit/frontend/parser.h"

namespace jitd::devices::cuda {
namespace {

// add_one(p, n): p[i] += 1 for i < n, one thread per element.
// fault(): stores to address 8, an illegal address.
constexpr const char* kPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry add_one(.param .u64 p, .param .u64 n)
{
  .reg .b64 %rd<6>;
  .reg .b32 %r<5>;
  .reg .f32 %f<3>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd2, [n];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  cvt.u64.u32 %rd3, %r4;
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd4, %rd1;
  shl.b64 %rd5, %rd3, 2;
  add.s64 %rd4, %rd4, %rd5;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
.visible .entry fault()
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  mov.u64 %rd1, 8;
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

class CudaGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto driver = LoadCudaDriver();
    if (!driver.ok()) GTEST_SKIP() << "no GPU test: " << driver.status().message();
    driver_ = std::move(*driver);
    auto runtime = CudaRuntime::Open(driver_->symbols());
    if (!runtime.ok()) GTEST_SKIP() << "no GPU test: " << runtime.status().message();
    runtime_ = std::move(*runtime);
  }
  // Runs add_one on n floats through `runtime_` on `stream`, checking the result.
  void AddOne(const CudaModule& module, CudaStream& stream, uint64_t n) {
    std::vector<float> host(n);
    std::iota(host.begin(), host.end(), 0.0f);
    auto account = runtime_->CreateAccount("gpu test", 0);
    auto buffer = runtime_->Allocate(account, n * sizeof(float), stream);
    ASSERT_TRUE(buffer.ok()) << buffer.status().ToString();
    ASSERT_TRUE(runtime_->CopyToDevice((*buffer)->pointer(), host.data(), n * 4, stream).ok());
    CUdeviceptr p = (*buffer)->pointer();
    void* args[] = {&p, &n};
    const uint32_t blocks = static_cast<uint32_t>((n + 255) / 256);
    Status launched = runtime_->Launch(module, 0, Dim3{blocks}, Dim3{256}, 0, args, stream);
    ASSERT_TRUE(launched.ok()) << launched.ToString();
    std::vector<float> out(n);
    ASSERT_TRUE(runtime_->CopyToHost(out.data(), p, n * 4, stream).ok());
    ASSERT_TRUE(runtime_->Synchronize(stream).ok());
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<float>(i) + 1.0f) << i;
  }
  std::unique_ptr<CudaDriverLibrary> driver_;
  std::unique_ptr<CudaRuntime> runtime_;
};

TEST_F(CudaGpuTest, OpensAndReportsTheDevice) {
  const CudaDeviceInfo& info = runtime_->info();
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.total_bytes, 0u);
  EXPECT_GE(info.driver_version, 12000);
  CudaRuntimeStats stats = runtime_->stats();
  EXPECT_GT(stats.device_total_bytes, 0u);
  EXPECT_EQ(stats.pool_used_bytes, 0u);
  std::printf("GPU %d: %s, sm_%d%d, %llu MiB, driver %d\n", info.ordinal, info.name.c_str(),
              info.sm_major, info.sm_minor,
              static_cast<unsigned long long>(info.total_bytes >> 20), info.driver_version);
}

TEST_F(CudaGpuTest, LaunchesAndCopiesStagedAndRegistered) {
  auto stream = runtime_->CreateStream();
  ASSERT_TRUE(stream.ok());
  auto module = runtime_->LoadModule(kPtx, {"add_one", "fault"});
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  AddOne(**module, **stream, 1000);
  AddOne(**module, **stream, 3u << 20);  // 12 MiB: several staging chunks

  std::vector<float> segment(1 << 20, 2.0f);
  auto host = runtime_->RegisterHost(segment.data(), segment.size() * 4);
  ASSERT_TRUE(host.ok());
  EXPECT_TRUE((*host)->registered()) << (*host)->staging_reason();
  auto account = runtime_->CreateAccount("gpu test", 0);
  auto buffer = runtime_->Allocate(account, segment.size() * 4, **stream);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(runtime_->CopyToDevice((*buffer)->pointer(), segment.data(), segment.size() * 4,
                                     **stream, host->get()).ok());
  CUdeviceptr p = (*buffer)->pointer();
  uint64_t n = segment.size();
  void* args[] = {&p, &n};
  ASSERT_TRUE(runtime_->Launch(**module, 0, Dim3{4096}, Dim3{256}, 0, args, **stream).ok());
  ASSERT_TRUE(runtime_->CopyToHost(segment.data(), p, segment.size() * 4, **stream, host->get()).ok());
  ASSERT_TRUE(runtime_->Synchronize(**stream).ok());
  EXPECT_EQ(segment[0], 3.0f);
  EXPECT_EQ(segment.back(), 3.0f);
}

TEST_F(CudaGpuTest, QuotaRefusesBeforeTheDriver) {
  auto stream = runtime_->CreateStream();
  ASSERT_TRUE(stream.ok());
  auto account = runtime_->CreateAccount("gpu test", 1 << 20);
  auto ok = runtime_->Allocate(account, 1 << 20, **stream);
  ASSERT_TRUE(ok.ok());
  auto over = runtime_->Allocate(account, 1, **stream);
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
}

// A kernel's illegal address. Where the driver makes a new context after
// it, the module is reloaded and both streams work; where it does not (NVIDIA's
// driver 580 on an H200, 2026-11-29: every context in the process is refused
// after it), the runtime is lost and says so on every later call.
TEST_F(CudaGpuTest, IllegalAddressResetsOrLosesTheGpuSayingSo) {
  auto faulting = runtime_->CreateStream();
  auto bystander = runtime_->CreateStream();
  ASSERT_TRUE(faulting.ok() && bystander.ok());
  auto module = runtime_->LoadModule(kPtx, {"add_one", "fault"});
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  AddOne(**module, **bystander, 256);
  Status launched = runtime_->Launch(**module, 1, Dim3{1}, Dim3{1}, 0, {}, **faulting);
  Status synced = launched.ok() ? runtime_->Synchronize(**faulting) : launched;
  ASSERT_EQ(synced.code(), StatusCode::kUnavailable) << synced.ToString();
  EXPECT_NE(synced.message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << synced.message();
  EXPECT_NE(synced.message().find("context was reset"), std::string::npos) << synced.message();
  EXPECT_EQ(runtime_->stats().context_resets, 1u);
  const std::string lost = runtime_->stats().lost;
  std::printf("after the fault: %s\n", lost.empty() ? "a new context, work goes on" : lost.c_str());
  if (lost.empty()) {
    // The module was reloaded; both streams work.
    AddOne(**module, **bystander, 256);
    AddOne(**module, **faulting, 256);
    return;
  }
  EXPECT_NE(synced.message().find("only a new process can use the GPU"), std::string::npos) << synced.message();
  auto account = runtime_->CreateAccount("gpu test", 0);
  auto buffer = runtime_->Allocate(account, 1024, **bystander);
  ASSERT_FALSE(buffer.ok());
  EXPECT_EQ(buffer.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(buffer.status().message().find("the GPU is unusable in this process"), std::string::npos)
      << buffer.status().message();
  EXPECT_EQ(runtime_->stats().context_resets, 1u);  // no reset tried again
}

// A program through the cuda device (compiler + runtime) on the GPU: a
// fused elementwise kernel with a constant, and a reduction.
TEST(CudaGpuDevice, RunsPrograms) {
  auto device = CudaDevice::Create();
  if (!device.ok()) GTEST_SKIP() << "no GPU test: " << device.status().message();
  auto module = frontend::ParseModule(R"(
func.func @main(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<f32>) {
  %c = stablehlo.constant dense<2.0> : tensor<1000xf32>
  %y = stablehlo.multiply %x, %c : tensor<1000xf32>
  %z = stablehlo.add %y, %x : tensor<1000xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%z init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<1000xf32>, tensor<f32>) -> tensor<f32>
  return %z, %s : tensor<1000xf32>, tensor<f32>
}
)");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto exe = (*device)->Compile(std::shared_ptr<const ir::Module>(std::move(*module)));
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<float> x(1000);
  std::iota(x.begin(), x.end(), 0.0f);
  std::vector<float> z(1000);
  float s = 0;
  const void* in[] = {x.data()};
  void* out[] = {z.data(), &s};
  Status ran = (*exe)->Run(in, out, ExecuteOptions{});
  ASSERT_TRUE(ran.ok()) << ran.ToString();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(z[i], 3.0f * i) << i;
  EXPECT_EQ(s, 3.0f * 999 * 1000 / 2);  // exact in f32: every partial sum is an integer < 2^24
}

}  // namespace
}  // namespace jitd::devices::cuda
