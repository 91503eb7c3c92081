// The cuda runtime's and device's own host-side costs, measured against the
// in-process fake driver (devices/cuda/fake_driver.h): what jitd adds per
// allocation, launch and execute on top of the driver (the fake's own work
// — a map lookup, malloc, memcpy — is included, a real driver's is not).
// And the cold compile of a small program through the cuda device (LLVM
// NVPTX + the PTX assembler found here), which needs no GPU.
// Run: build/bin/jitd_cuda_runtime_bench (see BENCHMARKS.md).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_runtime.h"
#include "devices/cuda/fake_driver.h"
#include "jit/cache/disk_cache.h"
#include "jit/cache/fingerprint.h"
#include "jit/frontend/parser.h"

namespace jitd::devices::cuda {
namespace {

constexpr const char* kAdd = R"(
func.func @main(%x: tensor<1024xf32>, %y: tensor<1024xf32>) -> tensor<1024xf32> {
  %z = stablehlo.add %x, %y : tensor<1024xf32>
  %w = stablehlo.multiply %z, %x : tensor<1024xf32>
  return %w : tensor<1024xf32>
}
)";

struct Setup {
  Setup() {
    auto opened = CudaRuntime::Open(fake.symbols());
    if (!opened.ok()) std::abort();
    runtime = std::move(*opened);
    auto s = runtime->CreateStream();
    if (!s.ok()) std::abort();
    stream = std::move(*s);
  }
  FakeDriver fake;
  std::unique_ptr<CudaRuntime> runtime;
  std::unique_ptr<CudaStream> stream;
};

std::shared_ptr<const ir::Module> Parse(const char* text) {
  auto module = frontend::ParseModule(text);
  if (!module.ok()) std::abort();
  return std::shared_ptr<const ir::Module>(std::move(*module));
}

// Allocate + free of 256 bytes through the pool, counted on an account.
void BM_AllocateFree(benchmark::State& state) {
  Setup s;
  auto account = s.runtime->CreateAccount("bench", uint64_t{1} << 30);
  for (auto _ : state) {
    auto a = s.runtime->Allocate(account, 256, *s.stream);
    if (!a.ok()) state.SkipWithError("allocate failed");
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_AllocateFree);

// One launch of a kernel that does nothing (the fake runs no code for it).
void BM_Launch(benchmark::State& state) {
  Setup s;
  auto module = s.runtime->LoadModule(FakeDriver::Cubin({"k"}), {"k"});
  if (!module.ok()) std::abort();
  CUdeviceptr p = 0;
  void* args[] = {&p};
  for (auto _ : state) {
    Status launched = s.runtime->Launch(**module, 0, Dim3{1}, Dim3{128}, 0, args, *s.stream);
    if (!launched.ok()) state.SkipWithError("launch failed");
  }
}
BENCHMARK(BM_Launch);

// An event from the pool, recorded and given back.
void BM_RecordEvent(benchmark::State& state) {
  Setup s;
  for (auto _ : state) {
    auto e = s.runtime->RecordEvent(*s.stream);
    if (!e.ok()) state.SkipWithError("record failed");
  }
}
BENCHMARK(BM_RecordEvent);

// A whole execute of a compiled program on raw buffers (two 4 KiB
// arguments in, one kernel, 4 KiB out), on a session's stream and account.
void BM_ExecuteOnFake(benchmark::State& state) {
  Setup s;
  std::unique_ptr<CudaDevice> device = CudaDevice::CreateForRuntime(s.runtime.get());
  auto exe = device->Compile(Parse(kAdd));
  if (!exe.ok()) {
    state.SkipWithError(exe.status().message().c_str());
    return;
  }
  std::vector<float> x(1024, 1.0f), y(1024, 2.0f), z(1024);
  const void* in[] = {x.data(), y.data()};
  void* out[] = {z.data()};
  ExecuteOptions options;
  options.device_memory = std::make_shared<MemoryAccount>("bench", 0);
  for (auto _ : state) {
    Status ran = (*exe)->Run(in, out, options);
    if (!ran.ok()) state.SkipWithError("run failed");
  }
}
BENCHMARK(BM_ExecuteOnFake);

// Cold compile: parse excluded; passes, NVPTX kernels, PTX -> cubin, module load.
void BM_CompileCold(benchmark::State& state) {
  Setup s;
  std::unique_ptr<CudaDevice> device = CudaDevice::CreateForRuntime(s.runtime.get());
  std::shared_ptr<const ir::Module> module = Parse(kAdd);
  for (auto _ : state) {
    auto exe = device->Compile(module);
    if (!exe.ok()) {
      state.SkipWithError(exe.status().message().c_str());
      return;
    }
  }
}
BENCHMARK(BM_CompileCold)->Unit(benchmark::kMillisecond)->Iterations(20);

// A cache hit of the same program: its serialized CudaProgram (what the
// daemon's disk cache stores, cubin included) checked and loaded as a
// module — no LLVM, no assembler. From bytes in memory, then through a
// jit/cache DiskCache entry (a file read and its checks, as a restarted
// daemon's first compile of a cached program).
std::string SerializedAdd(Setup& s, CudaDevice& device) {
  auto exe = device.Compile(Parse(kAdd));
  if (!exe.ok()) return {};
  auto bytes = device.Serialize(**exe);
  return bytes.ok() ? *bytes : std::string();
}

void BM_CacheHitDeserialize(benchmark::State& state) {
  Setup s;
  std::unique_ptr<CudaDevice> device = CudaDevice::CreateForRuntime(s.runtime.get());
  const std::string bytes = SerializedAdd(s, *device);
  if (bytes.empty()) {
    state.SkipWithError("compile failed");
    return;
  }
  for (auto _ : state) {
    auto exe = device->Deserialize(bytes);
    if (!exe.ok()) {
      state.SkipWithError(exe.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(exe);
  }
  state.counters["bytes"] = static_cast<double>(bytes.size());
}
BENCHMARK(BM_CacheHitDeserialize)->Unit(benchmark::kMicrosecond);

void BM_CacheHitFromDisk(benchmark::State& state) {
  Setup s;
  std::unique_ptr<CudaDevice> device = CudaDevice::CreateForRuntime(s.runtime.get());
  const std::string bytes = SerializedAdd(s, *device);
  char dir_template[] = "/tmp/jitd_cuda_bench_XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (bytes.empty() || dir == nullptr) {
    state.SkipWithError("compile or temporary directory failed");
    return;
  }
  cache::DiskCacheOptions options;
  options.dir = dir;
  auto disk = cache::DiskCache::Open(options);
  cache::CacheKeyParts parts;
  parts.program_hash = cache::HashProgram(kAdd);
  parts.device = "cuda";
  parts.options = "target=" + device->compile_target();
  if (!disk.ok() || !(*disk)->Put(parts, bytes).ok()) {
    state.SkipWithError("disk cache failed");
    return;
  }
  for (auto _ : state) {
    auto entry = (*disk)->Get(parts);
    if (!entry.ok() || !entry->has_value()) {
      state.SkipWithError("disk cache miss");
      break;
    }
    auto exe = device->Deserialize((*entry)->payload);
    if (!exe.ok()) {
      state.SkipWithError(exe.status().message().c_str());
      break;
    }
    benchmark::DoNotOptimize(exe);
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_CacheHitFromDisk)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace jitd::devices::cuda

BENCHMARK_MAIN();
