// CudaRuntime against the fake driver: opening (and each reason it cannot),
// a stream per session, the event pool, modules and launches, and recovery
// from a sticky error.
#include "devices/cuda/cuda_runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "devices/cuda/fake_driver.h"

namespace jitd::devices::cuda {
namespace {

// A fake kernel: adds 1 to n floats at params[0] (a device pointer, which
// the fake driver makes a host address); params[1] points at n.
CUresult AddOne(void** params, unsigned, unsigned) {
  float* data = reinterpret_cast<float*>(*static_cast<CUdeviceptr*>(params[0]));
  const uint64_t n = *static_cast<uint64_t*>(params[1]);
  for (uint64_t i = 0; i < n; ++i) data[i] += 1.0f;
  return CUDA_SUCCESS;
}

std::unique_ptr<CudaRuntime> OpenOrDie(FakeDriver& fake, CudaRuntimeOptions options = {}) {
  auto runtime = CudaRuntime::Open(fake.symbols(), options);
  EXPECT_TRUE(runtime.ok()) << runtime.status().ToString();
  return runtime.ok() ? std::move(*runtime) : nullptr;
}

// Runs AddOne (kernel 0 of `module`) over `values` in a new buffer of
// `account` on `stream`: the values after, or the first failure.
StatusOr<std::vector<float>> AddOneOnDevice(CudaRuntime& runtime, const CudaModule& module,
                                            const std::shared_ptr<CudaMemoryAccount>& account,
                                            CudaStream& stream, std::vector<float> values) {
  const uint64_t bytes = values.size() * sizeof(float);
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<CudaAllocation> buffer, runtime.Allocate(account, bytes, stream));
  CUdeviceptr p = buffer->pointer();
  uint64_t n = values.size();
  void* args[] = {&p, &n};
  JITD_RETURN_IF_ERROR(runtime.CopyToDevice(p, values.data(), bytes, stream));
  JITD_RETURN_IF_ERROR(runtime.Launch(module, 0, Dim3{1}, Dim3{static_cast<unsigned>(n)}, 0, args, stream));
  JITD_RETURN_IF_ERROR(runtime.CopyToHost(values.data(), p, bytes, stream));
  return values;
}

TEST(CudaRuntimeOpen, ReportsNoDevice) {
  FakeDriverOptions options;
  options.init_result = CUDA_ERROR_NO_DEVICE;
  FakeDriver fake(options);
  auto runtime = CudaRuntime::Open(fake.symbols());
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(runtime.status().message(), "no CUDA device");
}

TEST(CudaRuntimeOpen, ReportsZeroDevices) {
  FakeDriverOptions options;
  options.devices = 0;
  FakeDriver fake(options);
  auto runtime = CudaRuntime::Open(fake.symbols());
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().message(), "no CUDA device");
}

TEST(CudaRuntimeOpen, ReportsOldDriver) {
  FakeDriverOptions options;
  options.driver_version = 11080;
  FakeDriver fake(options);
  auto runtime = CudaRuntime::Open(fake.symbols());
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(runtime.status().message(), "driver too old: CUDA 11.8 driver (jitd needs 12.0 or newer)");
}

TEST(CudaRuntimeOpen, ReportsTheStub) {
  FakeDriverOptions options;
  options.init_result = CUDA_ERROR_STUB_LIBRARY;
  FakeDriver fake(options);
  auto runtime = CudaRuntime::Open(fake.symbols());
  ASSERT_FALSE(runtime.ok());
  EXPECT_NE(runtime.status().message().find("stub"), std::string::npos);
}

TEST(CudaRuntimeOpen, ReportsMissingOrdinalAndPools) {
  {
    FakeDriver fake;
    CudaRuntimeOptions options;
    options.ordinal = 3;
    auto runtime = CudaRuntime::Open(fake.symbols(), options);
    ASSERT_FALSE(runtime.ok());
    EXPECT_EQ(runtime.status().message(), "no CUDA device 3 (this machine has 1)");
  }
  {
    FakeDriverOptions options;
    options.memory_pools = false;
    FakeDriver fake(options);
    auto runtime = CudaRuntime::Open(fake.symbols());
    ASSERT_FALSE(runtime.ok());
    EXPECT_NE(runtime.status().message().find("memory pools"), std::string::npos);
  }
}

TEST(CudaRuntimeOpen, RetainsOnePrimaryContextAndReleasesIt) {
  FakeDriver fake;
  {
    auto runtime = OpenOrDie(fake);
    ASSERT_TRUE(runtime);
    EXPECT_EQ(runtime->info().name, "Fake GPU");
    EXPECT_EQ(runtime->info().sm_major, 9);
    EXPECT_EQ(runtime->info().driver_version, 13000);
    EXPECT_EQ(fake.calls("cuDevicePrimaryCtxRetain"), 1);
    EXPECT_EQ(fake.calls("cuMemPoolCreate"), 1);
    // Nothing is taken from the GPU up front.
    EXPECT_EQ(fake.device_bytes_in_use(), 0u);
  }
  EXPECT_EQ(fake.calls("cuDevicePrimaryCtxRelease"), 1);
  EXPECT_EQ(fake.calls("cuMemPoolDestroy"), 1);
  EXPECT_EQ(fake.live_streams(), 0u);
}

TEST(CudaRuntime, OneStreamPerSession) {
  FakeDriver fake;
  auto runtime = OpenOrDie(fake);
  const size_t base = fake.live_streams();  // the runtime's own
  auto a = runtime->CreateStream();
  auto b = runtime->CreateStream();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->handle(), (*b)->handle());
  EXPECT_EQ(fake.live_streams(), base + 2);
  a->reset();
  EXPECT_EQ(fake.live_streams(), base + 1);
  EXPECT_TRUE(runtime->Synchronize(**b).ok());
}

TEST(CudaRuntime, StreamsWorkFromOtherThreads) {
  FakeDriver fake;
  auto runtime = OpenOrDie(fake);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto stream = runtime->CreateStream();
      if (stream.ok() && runtime->Synchronize(**stream).ok()) ok.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
  // Each new thread made the context current once.
  EXPECT_GE(fake.calls("cuCtxSetCurrent"), 4);
}

TEST(CudaRuntime, EventsComeBackToThePool) {
  FakeDriver fake;
  auto runtime = OpenOrDie(fake);
  auto stream = runtime->CreateStream();
  ASSERT_TRUE(stream.ok());
  {
    std::vector<std::unique_ptr<CudaEvent>> events;
    for (int i = 0; i < 3; ++i) {
      auto e = runtime->RecordEvent(**stream);
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      events.push_back(std::move(*e));
    }
    EXPECT_TRUE(runtime->WaitEvent(*events[0]).ok());
  }
  EXPECT_EQ(runtime->free_events(), 3u);
  EXPECT_EQ(fake.calls("cuEventCreate"), 3);
  for (int round = 0; round < 5; ++round) {
    auto e = runtime->RecordEvent(**stream);
    ASSERT_TRUE(e.ok());
  }
  EXPECT_EQ(fake.calls("cuEventCreate"), 3);  // reused, not made again
  EXPECT_EQ(fake.calls("cuEventRecord"), 8);
}

TEST(CudaRuntime, TimingEventsHaveTheirOwnPool) {
  FakeDriver fake;
  auto runtime = OpenOrDie(fake);
  auto stream = runtime->CreateStream();
  ASSERT_TRUE(stream.ok());
  auto module = runtime->LoadModule(FakeDriver::Cubin({"k"}), {"k"});
  ASSERT_TRUE(module.ok());
  for (int round = 0; round < 2; ++round) {
    auto start = runtime->RecordEvent(**stream, /*timing=*/true);
    ASSERT_TRUE(start.ok());
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(runtime->Launch(**module, 0, Dim3{1}, Dim3{1}, 0, {}, **stream).ok());
    }
    auto end = runtime->RecordEvent(**stream, /*timing=*/true);
    ASSERT_TRUE(end.ok());
    auto ms = runtime->ElapsedMillis(**start, **end);
    ASSERT_TRUE(ms.ok()) << ms.status().ToString();
    EXPECT_EQ(*ms, 1.5f);  // the fake's 0.5 ms per launch
    auto plain = runtime->RecordEvent(**stream);
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(runtime->ElapsedMillis(**start, **plain).status().code(),
              StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(fake.calls("cuEventCreate"), 3);  // two timing, one plain; reused
}

TEST(CudaRuntime, ModulesLoadAndNameTheirKernels) {
  FakeDriver fake;
  auto runtime = OpenOrDie(fake);
  auto module = runtime->LoadModule(FakeDriver::Cubin({"k0", "k1"}), {"k0", "k1"});
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  EXPECT_EQ((*module)->num_functions(), 2u);
  EXPECT_EQ(fake.live_modules(), 1u);

  auto missing = runtime->LoadModule(FakeDriver::Cubin({"k0"}), {"k0", "absent"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("kernel 'absent' is not in the module"),
            std::string::npos);
  EXPECT_EQ(fake.live_modules(), 1u);  // the failed one was unloaded

  auto bad = runtime->LoadModule("not a cubin", {"k"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("cuModuleLoadData"), std::string::npos);

  module->reset();
  EXPECT_EQ(fake.live_modules(), 0u);
}

TEST(CudaRuntime, LaunchRunsOnDeviceMemory) {
  FakeDriver fake;
  fake.SetKernel("add_one", AddOne);
  auto runtime = OpenOrDie(fake);
  auto stream = runtime->CreateStream();
  ASSERT_TRUE(stream.ok());
  auto module = runtime->LoadModule(FakeDriver::Cubin({"add_one"}), {"add_one"});
  ASSERT_TRUE(module.ok());
  auto account = runtime->CreateAccount("client 1", 0);
  std::vector<float> host = {1, 2, 3, 4};
  auto buffer = runtime->Allocate(account, host.size() * sizeof(float), **stream);
  ASSERT_TRUE(buffer.ok()) << buffer.status().ToString();
  ASSERT_TRUE(runtime->CopyToDevice((*buffer)->pointer(), host.data(), 16, **stream).ok());
  CUdeviceptr p = (*buffer)->pointer();
  uint64_t n = host.size();
  void* args[] = {&p, &n};
  ASSERT_TRUE(runtime->Launch(**module, 0, Dim3{1}, Dim3{4}, 0, args, **stream).ok());
  std::vector<float> out(4);
  ASSERT_TRUE(runtime->CopyToHost(out.data(), p, 16, **stream).ok());
  ASSERT_TRUE(runtime->Synchronize(**stream).ok());
  EXPECT_EQ(out, (std::vector<float>{2, 3, 4, 5}));

  Status wrong = runtime->Launch(**module, 1, Dim3{1}, Dim3{1}, 0, args, **stream);
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
}

TEST(CudaRuntime, StickyErrorResetsTheContextAndReloadsModules) {
  FakeDriver fake;
  fake.SetKernel("add_one", AddOne);
  fake.SetKernel("fault", [](void**, unsigned, unsigned) { return CUDA_ERROR_ILLEGAL_ADDRESS; });
  auto runtime = OpenOrDie(fake);
  auto stream_a = runtime->CreateStream();  // the faulting client
  auto stream_b = runtime->CreateStream();  // a bystander
  ASSERT_TRUE(stream_a.ok() && stream_b.ok());
  auto module = runtime->LoadModule(FakeDriver::Cubin({"add_one", "fault"}), {"add_one", "fault"});
  ASSERT_TRUE(module.ok());
  auto account_a = runtime->CreateAccount("a", 0);
  auto account_b = runtime->CreateAccount("b", 0);
  auto lost = runtime->Allocate(account_b, 64, **stream_b);
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(account_b->bytes_in_use(), 64u);
  const uint64_t generation = runtime->generation();

  Status fault = runtime->Launch(**module, 1, Dim3{1}, Dim3{1}, 0, {}, **stream_a);
  EXPECT_EQ(fault.code(), StatusCode::kUnavailable);
  EXPECT_NE(fault.message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << fault.message();
  EXPECT_NE(fault.message().find("context was reset"), std::string::npos);
  EXPECT_EQ(fake.context_resets(), 1);
  EXPECT_FALSE(fake.broken());
  EXPECT_EQ(runtime->generation(), generation + 1);
  EXPECT_EQ(fake.calls("cuModuleLoadData"), 2);  // loaded, then reloaded
  CudaRuntimeStats stats = runtime->stats();
  EXPECT_EQ(stats.context_resets, 1u);
  EXPECT_NE(stats.last_reset.find("ILLEGAL_ADDRESS"), std::string::npos);

  // The bystander's buffer died with the context: it says so, and freeing
  // it frees nothing on the device but gives its bytes back.
  Status check = runtime->CheckAllocation(**lost);
  EXPECT_EQ(check.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(check.message().find("lost when the GPU's context was reset"), std::string::npos);
  const int frees = fake.calls("cuMemFreeAsync");
  lost->reset();
  EXPECT_EQ(fake.calls("cuMemFreeAsync"), frees);
  EXPECT_EQ(account_b->bytes_in_use(), 0u);

  // Both clients work again on their old streams (made again) and the
  // reloaded module.
  for (auto* stream : {&*stream_a, &*stream_b}) {
    auto& account = stream == &*stream_a ? account_a : account_b;
    auto ran = AddOneOnDevice(*runtime, **module, account, **stream, {7, 8});
    ASSERT_TRUE(ran.ok()) << ran.status().ToString();
    EXPECT_EQ(*ran, (std::vector<float>{8, 9}));
  }
  EXPECT_EQ(fake.context_resets(), 1);
}

// A module that fails to load again after a reset (here the driver
// refuses the reload once, as it might for memory) does not lose the GPU:
// the reset's message names it, other work runs, and its next launch loads
// it again.
TEST(CudaRuntime, AModuleThatDoesNotReloadAfterAResetIsLoadedAtItsNextLaunch) {
  FakeDriver fake;
  fake.SetKernel("add_one", AddOne);
  fake.SetKernel("fault", [](void**, unsigned, unsigned) { return CUDA_ERROR_ILLEGAL_ADDRESS; });
  auto runtime = OpenOrDie(fake);
  auto stream = runtime->CreateStream();
  ASSERT_TRUE(stream.ok());
  auto module = runtime->LoadModule(FakeDriver::Cubin({"add_one", "fault"}), {"add_one", "fault"});
  ASSERT_TRUE(module.ok());

  fake.FailModuleLoads(CUDA_ERROR_OUT_OF_MEMORY, 1);
  Status fault = runtime->Launch(**module, 1, Dim3{1}, Dim3{1}, 0, {}, **stream);
  EXPECT_EQ(fault.code(), StatusCode::kUnavailable);
  EXPECT_NE(fault.message().find("some modules did not load again"), std::string::npos) << fault.message();
  EXPECT_NE(fault.message().find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << fault.message();
  EXPECT_EQ(fake.context_resets(), 1);
  EXPECT_TRUE(runtime->stats().lost.empty()) << runtime->stats().lost;
  EXPECT_EQ(fake.calls("cuModuleLoadData"), 2);  // loaded, then refused once

  // The next launch loads it and runs; later ones load nothing.
  auto account = runtime->CreateAccount("a", 0);
  auto ran = AddOneOnDevice(*runtime, **module, account, **stream, {1, 2});
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  EXPECT_EQ(*ran, (std::vector<float>{2, 3}));
  EXPECT_EQ(fake.calls("cuModuleLoadData"), 3);
  ASSERT_TRUE(AddOneOnDevice(*runtime, **module, account, **stream, {1, 2}).ok());
  EXPECT_EQ(fake.calls("cuModuleLoadData"), 3);

  // A reload that fails at the launch too is refused, naming why; the one
  // after loads it.
  fake.FailModuleLoads(CUDA_ERROR_OUT_OF_MEMORY, 2);
  fault = runtime->Launch(**module, 1, Dim3{1}, Dim3{1}, 0, {}, **stream);
  EXPECT_EQ(fault.code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake.context_resets(), 2);
  ran = AddOneOnDevice(*runtime, **module, account, **stream, {1, 2});
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.status().code(), StatusCode::kFailedPrecondition) << ran.status().ToString();
  EXPECT_NE(ran.status().message().find("could not be loaded again after the context reset"), std::string::npos)
      << ran.status().message();
  EXPECT_NE(ran.status().message().find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << ran.status().message();
  ran = AddOneOnDevice(*runtime, **module, account, **stream, {1, 2});
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  EXPECT_EQ(*ran, (std::vector<float>{2, 3}));
  EXPECT_EQ(fake.context_resets(), 2);
  EXPECT_TRUE(runtime->stats().lost.empty()) << runtime->stats().lost;
}

// NVIDIA's driver makes no new context in a process after a kernel's
// illegal address (seen on an H200): the runtime then says, once and on
// every later call, that only a new process can use the GPU, and does not
// try to reset again.
TEST(CudaRuntime, AStickyErrorTheDriverWillNotResetLosesTheGpuForTheProcess) {
  FakeDriver fake(FakeDriverOptions{.sticky_errors_outlive_reset = true});
  fake.SetKernel("fault", [](void**, unsigned, unsigned) { return CUDA_ERROR_ILLEGAL_ADDRESS; });
  auto runtime = OpenOrDie(fake);
  auto stream = runtime->CreateStream();
  ASSERT_TRUE(stream.ok());
  auto module = runtime->LoadModule(FakeDriver::Cubin({"fault"}), {"fault"});
  ASSERT_TRUE(module.ok());
  EXPECT_TRUE(runtime->stats().lost.empty());

  Status fault = runtime->Launch(**module, 0, Dim3{1}, Dim3{1}, 0, {}, **stream);
  EXPECT_EQ(fault.code(), StatusCode::kUnavailable);
  EXPECT_NE(fault.message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << fault.message();
  EXPECT_NE(fault.message().find("only a new process can use the GPU"), std::string::npos) << fault.message();
  const std::string lost = runtime->stats().lost;
  EXPECT_NE(lost.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << lost;
  EXPECT_EQ(fake.context_resets(), 1);

  // Later calls, on any stream: the first error and the remedy, no reset.
  auto other = runtime->CreateStream();
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(other.status().message().find("the GPU is unusable in this process"), std::string::npos)
      << other.status().message();
  EXPECT_NE(other.status().message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos);
  auto account = runtime->CreateAccount("a", 0);
  auto buffer = runtime->Allocate(account, 64, **stream);
  ASSERT_FALSE(buffer.ok());
  EXPECT_EQ(buffer.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(buffer.status().message().find("only a new process can use the GPU"), std::string::npos)
      << buffer.status().message();
  EXPECT_EQ(fake.context_resets(), 1);
  EXPECT_EQ(runtime->stats().lost, lost);
}

TEST(CudaRuntime, CallsInFlightFailOnceAndOneResetHappens) {
  FakeDriver fake;
  auto runtime = OpenOrDie(fake);
  auto a = runtime->CreateStream();
  auto b = runtime->CreateStream();
  ASSERT_TRUE(a.ok() && b.ok());
  // Another client's kernel broke the context while b waits on its stream.
  fake.InjectStickyError(CUDA_ERROR_LAUNCH_FAILED);
  Status waited = runtime->Synchronize(**b);
  EXPECT_EQ(waited.code(), StatusCode::kUnavailable);
  EXPECT_NE(waited.message().find("CUDA_ERROR_LAUNCH_FAILED"), std::string::npos);
  EXPECT_TRUE(runtime->Synchronize(**a).ok());
  EXPECT_TRUE(runtime->Synchronize(**b).ok());
  EXPECT_EQ(fake.context_resets(), 1);
}

TEST(CudaRuntime, ConcurrentFailuresResetOnce) {
  FakeDriver fake;
  auto runtime = OpenOrDie(fake);
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<CudaStream>> streams;
  for (int i = 0; i < kThreads; ++i) {
    auto s = runtime->CreateStream();
    ASSERT_TRUE(s.ok());
    streams.push_back(std::move(*s));
  }
  fake.InjectStickyError(CUDA_ERROR_ILLEGAL_ADDRESS);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { (void)runtime->Synchronize(*streams[i]); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(fake.context_resets(), 1);
  for (auto& s : streams) EXPECT_TRUE(runtime->Synchronize(*s).ok());
}

}  // namespace
}  // namespace jitd::devices::cuda
