// Device memory and host memory bookkeeping against the fake driver: the
// per-client quota, the pool, frees after a session's stream is gone, host
// registration (flags 0), the pinned cap and the staging fallback.
#include "devices/cuda/cuda_allocator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "devices/cuda/cuda_runtime.h"
#include "devices/cuda/fake_driver.h"

namespace jitd::devices::cuda {
namespace {

struct Fixture {
  explicit Fixture(CudaRuntimeOptions options = {}, FakeDriverOptions fake_options = {})
      : fake(fake_options) {
    auto opened = CudaRuntime::Open(fake.symbols(), options);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    if (opened.ok()) runtime = std::move(*opened);
    auto s = runtime->CreateStream();
    EXPECT_TRUE(s.ok());
    if (s.ok()) stream = std::move(*s);
  }
  FakeDriver fake;
  std::unique_ptr<CudaRuntime> runtime;
  std::unique_ptr<CudaStream> stream;
};

TEST(CudaAllocator, QuotaIsPerClientAndNamesTheFlag) {
  Fixture f;
  auto a = f.runtime->CreateAccount("client 7 (pid 42)", 1000);
  auto b = f.runtime->CreateAccount("client 8", 1000);
  auto first = f.runtime->Allocate(a, 600, *f.stream);
  ASSERT_TRUE(first.ok());
  auto second = f.runtime->Allocate(a, 500, *f.stream);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(second.status().message().find("--max-device-bytes"), std::string::npos);
  EXPECT_NE(second.status().message().find("client 7 (pid 42)"), std::string::npos);
  EXPECT_EQ(a->bytes_in_use(), 600u);
  EXPECT_EQ(f.fake.live_allocations(), 1u);  // the refused one never reached the driver
  // Another client's limit is its own.
  auto other = f.runtime->Allocate(b, 900, *f.stream);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(b->bytes_in_use(), 900u);
  first->reset();
  EXPECT_EQ(a->bytes_in_use(), 0u);
  EXPECT_EQ(a->peak_bytes(), 600u);
  auto whole = f.runtime->Allocate(a, 1000, *f.stream);
  EXPECT_TRUE(whole.ok());
  EXPECT_EQ(f.fake.device_bytes_in_use(), 1900u);
}

TEST(CudaAllocator, ZeroLimitMeansNone) {
  Fixture f;
  auto a = f.runtime->CreateAccount("c", 0);
  std::vector<std::unique_ptr<CudaAllocation>> held;
  for (int i = 0; i < 8; ++i) {
    auto buffer = f.runtime->Allocate(a, 1 << 20, *f.stream);
    ASSERT_TRUE(buffer.ok());
    held.push_back(std::move(*buffer));
  }
  EXPECT_EQ(a->bytes_in_use(), 8u << 20);
  auto zero = f.runtime->Allocate(a, 0, *f.stream);
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
}

TEST(CudaAllocator, FullGpuIsResourceExhaustedNamingTheGpu) {
  FakeDriverOptions small;
  small.device_bytes = 1 << 20;
  Fixture f({}, small);
  auto a = f.runtime->CreateAccount("c", 0);
  auto big = f.runtime->Allocate(a, 2 << 20, *f.stream);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("GPU 0 cannot give"), std::string::npos)
      << big.status().message();
  EXPECT_EQ(a->bytes_in_use(), 0u);
}

TEST(CudaAllocator, AllocationsAlignedLessThanKernelsAssumeAreRefused) {
  {
    // One fake driver at a time: it is the process's driver.
    Fixture aligned;
    auto a = aligned.runtime->CreateAccount("c", 0);
    auto ok = aligned.runtime->Allocate(a, 100, *aligned.stream);
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ((*ok)->pointer() % kCudaAllocationAlignment, 0u);
  }
  FakeDriverOptions misaligned;
  misaligned.allocation_offset = 8;
  Fixture f({}, misaligned);
  auto b = f.runtime->CreateAccount("c", 0);
  auto refused = f.runtime->Allocate(b, 100, *f.stream);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInternal);
  EXPECT_NE(refused.status().message().find("not a multiple of 16 bytes"), std::string::npos)
      << refused.status().message();
  // Freed again, and not counted.
  EXPECT_EQ(b->bytes_in_use(), 0u);
  EXPECT_EQ(f.fake.live_allocations(), 0u);
  EXPECT_EQ(f.fake.context_resets(), 0);
}

TEST(CudaAllocator, StickyErrorWhileAllocatingResets) {
  Fixture f;
  auto a = f.runtime->CreateAccount("c", 0);
  f.fake.InjectStickyError(CUDA_ERROR_ILLEGAL_ADDRESS);
  auto failed = f.runtime->Allocate(a, 64, *f.stream);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("context was reset"), std::string::npos)
      << failed.status().message();
  EXPECT_EQ(f.fake.context_resets(), 1);
  EXPECT_EQ(a->bytes_in_use(), 0u);
  EXPECT_TRUE(f.runtime->Allocate(a, 64, *f.stream).ok());
}

TEST(CudaAllocator, PoolUsageAndStats) {
  Fixture f;
  auto a = f.runtime->CreateAccount("c", 0);
  auto buffer = f.runtime->Allocate(a, 4096, *f.stream);
  ASSERT_TRUE(buffer.ok());
  CudaRuntimeStats stats = f.runtime->stats();
  EXPECT_EQ(stats.pool_used_bytes, 4096u);
  EXPECT_EQ(stats.device_total_bytes, uint64_t{64} << 20);
  EXPECT_EQ(stats.device_free_bytes, (uint64_t{64} << 20) - 4096);
}

TEST(CudaAllocator, BufferOutlivingItsStreamIsFreedOnTheRuntimeStream) {
  Fixture f;
  auto a = f.runtime->CreateAccount("c", 0);
  auto buffer = f.runtime->Allocate(a, 256, *f.stream);
  ASSERT_TRUE(buffer.ok());
  f.stream.reset();  // the session ended first
  EXPECT_EQ(f.fake.calls("cuStreamSynchronize"), 1);
  buffer->reset();
  EXPECT_EQ(f.fake.live_allocations(), 0u);  // freed, on a live stream
  EXPECT_EQ(a->bytes_in_use(), 0u);
}

TEST(CudaHostMemory, RegistersWithFlagsZeroAndCopiesDirectly) {
  CudaRuntimeOptions options;
  options.max_pinned_bytes = 8 << 20;
  Fixture f(options);
  std::vector<uint8_t> segment(1 << 20);
  std::iota(segment.begin(), segment.end(), 0);
  auto host = f.runtime->RegisterHost(segment.data(), segment.size());
  ASSERT_TRUE(host.ok());
  EXPECT_TRUE((*host)->registered());
  EXPECT_EQ(f.fake.host_register_flags(), std::vector<unsigned>{0});
  EXPECT_EQ(f.fake.registered_host_bytes(), 1u << 20);
  auto a = f.runtime->CreateAccount("c", 0);
  auto buffer = f.runtime->Allocate(a, 4096, *f.stream);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(f.runtime->CopyToDevice((*buffer)->pointer(), segment.data() + 100, 4096, *f.stream,
                                      host->get()).ok());
  ASSERT_TRUE(f.runtime->CopyToHost(segment.data() + 8192, (*buffer)->pointer(), 4096, *f.stream,
                                    host->get()).ok());
  ASSERT_TRUE(f.runtime->Synchronize(*f.stream).ok());
  EXPECT_EQ(0, std::memcmp(segment.data() + 100, segment.data() + 8192, 4096));
  EXPECT_EQ(f.fake.calls("cuMemAllocHost"), 0);  // no staging needed
  EXPECT_EQ(f.runtime->stats().registered_bytes, 1u << 20);
  host->reset();
  EXPECT_EQ(f.fake.registered_host_bytes(), 0u);
  EXPECT_EQ(f.runtime->stats().pinned_bytes, 0u);
}

// A copy that names no registration finds the live one holding its range
// (the daemon registers client segments at attach and the device's copies
// do not name them): direct, no staging; once it is gone, staged.
TEST(CudaHostMemory, CopiesFindTheRegistrationHoldingTheirRange) {
  Fixture f;
  std::vector<uint8_t> segment(1 << 20);
  std::iota(segment.begin(), segment.end(), 5);
  auto host = f.runtime->RegisterHost(segment.data(), segment.size());
  ASSERT_TRUE(host.ok());
  ASSERT_TRUE((*host)->registered());
  auto a = f.runtime->CreateAccount("c", 0);
  auto buffer = f.runtime->Allocate(a, 4096, *f.stream);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(f.runtime->CopyToDevice((*buffer)->pointer(), segment.data() + 64, 4096, *f.stream).ok());
  ASSERT_TRUE(f.runtime->CopyToHost(segment.data() + 65536, (*buffer)->pointer(), 4096, *f.stream).ok());
  ASSERT_TRUE(f.runtime->Synchronize(*f.stream).ok());
  EXPECT_EQ(0, std::memcmp(segment.data() + 64, segment.data() + 65536, 4096));
  EXPECT_EQ(f.fake.calls("cuMemAllocHost"), 0);  // direct both ways
  EXPECT_EQ(f.fake.calls("cuMemcpyHtoDAsync"), 1);
  EXPECT_EQ(f.fake.calls("cuMemcpyDtoHAsync"), 1);
  // A range running past the registration's end is not inside it: staged.
  std::vector<uint8_t> outside(4096, 1);
  ASSERT_TRUE(f.runtime->CopyToDevice((*buffer)->pointer(), segment.data() + segment.size() - 100, 100,
                                      *f.stream).ok());
  EXPECT_EQ(f.fake.calls("cuMemcpyHtoDAsync"), 2);
  ASSERT_TRUE(f.runtime->CopyToDevice((*buffer)->pointer(), outside.data(), outside.size(), *f.stream).ok());
  EXPECT_EQ(f.fake.calls("cuMemAllocHost"), 1);  // outside any registration: a staging chunk
  host->reset();
  ASSERT_TRUE(f.runtime->CopyToDevice((*buffer)->pointer(), segment.data() + 64, 4096, *f.stream).ok());
  ASSERT_TRUE(f.runtime->Synchronize(*f.stream).ok());
  EXPECT_EQ(f.fake.registered_host_bytes(), 0u);
}

TEST(CudaHostMemory, PinnedCapSendsCopiesThroughStaging) {
  CudaRuntimeOptions options;
  options.max_pinned_bytes = (1 << 20) + (512 << 10);
  options.staging_chunk_bytes = 256 << 10;
  Fixture f(options);
  std::vector<uint8_t> first(1 << 20), second(1 << 20);
  std::iota(second.begin(), second.end(), 3);
  auto pinned = f.runtime->RegisterHost(first.data(), first.size());
  ASSERT_TRUE(pinned.ok());
  EXPECT_TRUE((*pinned)->registered());
  auto staged = f.runtime->RegisterHost(second.data(), second.size());
  ASSERT_TRUE(staged.ok());
  EXPECT_FALSE((*staged)->registered());
  EXPECT_NE((*staged)->staging_reason().find("cap on pinned host memory"), std::string::npos);
  EXPECT_EQ(f.fake.calls("cuMemHostRegister"), 1);

  auto a = f.runtime->CreateAccount("c", 0);
  auto buffer = f.runtime->Allocate(a, second.size(), *f.stream);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(f.runtime->CopyToDevice((*buffer)->pointer(), second.data(), second.size(),
                                      *f.stream, staged->get()).ok());
  std::vector<uint8_t> back(second.size());
  ASSERT_TRUE(f.runtime->CopyToHost(back.data(), (*buffer)->pointer(), back.size(), *f.stream,
                                    staged->get()).ok());
  EXPECT_EQ(back, second);
  // Staging stayed within the cap: 1 MiB registered leaves room for two
  // 256 KiB chunks, which the 1 MiB copies reused.
  EXPECT_LE(f.fake.pinned_host_bytes() + f.fake.registered_host_bytes(), options.max_pinned_bytes);
  EXPECT_GE(f.fake.calls("cuMemAllocHost"), 1);
  EXPECT_LE(f.fake.calls("cuMemAllocHost"), 2);
  EXPECT_EQ(f.fake.calls("cuMemcpyHtoDAsync"), 4);  // four chunks
  CudaRuntimeStats stats = f.runtime->stats();
  EXPECT_LE(stats.pinned_bytes, options.max_pinned_bytes);
  EXPECT_EQ(stats.pinned_bytes, stats.registered_bytes + stats.staging_bytes);
}

TEST(CudaHostMemory, DriverRefusalFallsBackToStaging) {
  Fixture f;
  f.fake.SetHostRegisterResult(CUDA_ERROR_NOT_PERMITTED);
  std::vector<uint8_t> segment(4096, 9);
  auto host = f.runtime->RegisterHost(segment.data(), segment.size());
  ASSERT_TRUE(host.ok());
  EXPECT_FALSE((*host)->registered());
  EXPECT_NE((*host)->staging_reason().find("cuMemHostRegister: CUDA_ERROR_NOT_PERMITTED"),
            std::string::npos)
      << (*host)->staging_reason();
  EXPECT_EQ(f.runtime->stats().registered_bytes, 0u);
  auto a = f.runtime->CreateAccount("c", 0);
  auto buffer = f.runtime->Allocate(a, 4096, *f.stream);
  ASSERT_TRUE(buffer.ok());
  EXPECT_TRUE(f.runtime->CopyToDevice((*buffer)->pointer(), segment.data(), 4096, *f.stream,
                                      host->get()).ok());
  EXPECT_EQ(f.fake.calls("cuMemAllocHost"), 1);
}

TEST(CudaHostMemory, NoPinnedMemoryAtAllCopiesFromPageable) {
  CudaRuntimeOptions options;
  options.max_pinned_bytes = 0;
  Fixture f(options);
  std::vector<uint8_t> data(10000, 5), back(10000);
  auto a = f.runtime->CreateAccount("c", 0);
  auto buffer = f.runtime->Allocate(a, data.size(), *f.stream);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(f.runtime->CopyToDevice((*buffer)->pointer(), data.data(), data.size(), *f.stream).ok());
  ASSERT_TRUE(f.runtime->CopyToHost(back.data(), (*buffer)->pointer(), back.size(), *f.stream).ok());
  EXPECT_EQ(back, data);
  EXPECT_EQ(f.fake.calls("cuMemAllocHost"), 0);
  EXPECT_EQ(f.runtime->stats().pinned_bytes, 0u);
}

TEST(CudaHostMemory, RegistrationSurvivesAReset) {
  Fixture f;
  std::vector<uint8_t> segment(4096, 1);
  auto host = f.runtime->RegisterHost(segment.data(), segment.size());
  ASSERT_TRUE(host.ok() && (*host)->registered());
  f.fake.InjectStickyError(CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(f.runtime->Synchronize(*f.stream).code(), StatusCode::kUnavailable);
  EXPECT_EQ(f.fake.registered_host_bytes(), 0u);  // the reset dropped it
  auto a = f.runtime->CreateAccount("c", 0);
  auto buffer = f.runtime->Allocate(a, 4096, *f.stream);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(f.runtime->CopyToDevice((*buffer)->pointer(), segment.data(), 4096, *f.stream,
                                      host->get()).ok());
  EXPECT_EQ(f.fake.registered_host_bytes(), 4096u);  // pinned again on use
  EXPECT_EQ(f.runtime->stats().registered_bytes, 4096u);
  host->reset();
  EXPECT_EQ(f.runtime->stats().registered_bytes, 0u);
}

}  // namespace
}  // namespace jitd::devices::cuda
