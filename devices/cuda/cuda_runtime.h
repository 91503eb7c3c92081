// The CUDA runtime of the daemon: one GPU's primary context, shared by all
// clients, and what runs in it.
//
//  - context: the GPU's primary context, retained once for the daemon;
//  - streams: one per client session (CudaStream), made by CreateStream;
//  - events: from a pool (CudaEvent goes back to it when destroyed);
//  - modules: cubins loaded with their kernels looked up by name
//    (CudaModule); the runtime keeps each module's bytes to reload it;
//  - launches and copies on a stream; Synchronize waits for a stream;
//  - device memory: CudaAllocator's pool with per-client accounts;
//  - host memory: a client's shared-memory segment registered with
//    cuMemHostRegister (flags 0) while pinned bytes stay under a cap, else
//    copies go through a daemon-owned pinned staging pool (same cap);
//  - recovery: a sticky error (illegal address, launch failure, ...) breaks
//    the context for every stream. The call that meets it re-creates the
//    context (release, reset, retain), the pool, reloads every live module
//    and reports it (resets(), last_reset()); the failing call and the
//    calls in flight on other streams fail UNAVAILABLE; streams, events and
//    registrations are re-made on their next use; device buffers from
//    before are lost (CheckAllocation). Other clients' next calls work.
//    Where the driver makes no new context after the error — NVIDIA's
//    driver 580 on an H200 refuses every context in the process after a
//    kernel's illegal address (seen 2026-11-29), as CUDA documents for
//    sticky errors — the runtime is lost: every later call fails
//    UNAVAILABLE naming the first error and that only a new process can use
//    the GPU (CudaRuntimeStats::lost), and no reset is tried again.
//
// Thread safety: CudaRuntime is thread-safe. A CudaStream is used by one
// thread at a time (its session's). Lifetime: streams, events, modules,
// buffers, accounts and host registrations must go before the runtime.
#ifndef JITD_DEVICES_CUDA_CUDA_RUNTIME_H_
#define JITD_DEVICES_CUDA_CUDA_RUNTIME_H_

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "devices/cuda/cuda_allocator.h"
#include "devices/cuda/cuda_symbols.h"

namespace jitd::devices::cuda {

class CudaRuntime;

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// What the runtime found about its GPU. Plain value.
struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  int sm_major = 0;          // compute capability
  int sm_minor = 0;
  int multiprocessors = 0;
  uint64_t total_bytes = 0;  // device memory
  int driver_version = 0;    // cuDriverGetVersion: 13000 = CUDA 13.0
};

struct CudaRuntimeOptions {
  int ordinal = 0;
  CudaAllocatorOptions allocator;
  // Host memory the daemon may pin: registered client segments plus the
  // staging pool. A registration past it falls back to staging.
  uint64_t max_pinned_bytes = uint64_t{1} << 30;
  // Size of one staging chunk (pinned with cuMemAllocHost on demand).
  uint64_t staging_chunk_bytes = uint64_t{4} << 20;
};

// A client session's stream. Re-created on its next use after a context
// reset. Not thread-safe (one session's thread at a time).
class CudaStream {
 public:
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  // The stream in the current context (valid until the next reset).
  CUstream handle() const { return stream_; }

 private:
  friend class CudaRuntime;
  CudaStream() = default;
  CudaRuntime* runtime_ = nullptr;
  CUstream stream_ = nullptr;
  uint64_t generation_ = 0;
};

// An event from the runtime's pool, returned to it when destroyed.
class CudaEvent {
 public:
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  CUevent handle() const { return event_; }
  bool timing() const { return timing_; }

 private:
  friend class CudaRuntime;
  CudaEvent() = default;
  CudaRuntime* runtime_ = nullptr;
  CUevent event_ = nullptr;
  bool timing_ = false;
  uint64_t generation_ = 0;
};

// A loaded cubin and its kernels (by index, in the order LoadModule was
// given their names). Unloaded when the last reference goes; reloaded by
// the runtime after a context reset.
class CudaModule {
 public:
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  size_t num_functions() const { return names_.size(); }
  const std::string& function_name(size_t i) const { return names_[i]; }
  uint64_t image_bytes() const { return image_.size(); }

 private:
  friend class CudaRuntime;
  CudaModule() = default;
  CudaRuntime* runtime_ = nullptr;
  std::string image_;  // the cubin, kept to reload
  std::vector<std::string> names_;
  // Current handles: written under the runtime's context lock held
  // exclusively (a reset), or shared with reload_mu_ (a load, or a reload
  // at a launch after a reset could not reload it); generation_ last
  // (release), so a launch that reads it current (acquire) may read them.
  // Mutable: a launch (of a const module) may reload them.
  mutable std::mutex reload_mu_;
  mutable CUmodule module_ = nullptr;
  mutable std::vector<CUfunction> functions_;
  mutable std::atomic<uint64_t> generation_{0};
};

// A client's host memory range made reachable for async copies: pinned by
// cuMemHostRegister when the cap allows (registered()), else copies stage
// through the daemon's pinned pool. Unregistered when destroyed.
class CudaHostMemory {
 public:
  ~CudaHostMemory();
  CudaHostMemory(const CudaHostMemory&) = delete;
  CudaHostMemory& operator=(const CudaHostMemory&) = delete;
  void* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }
  bool registered() const { return registered_; }
  // Why it is not registered ("" when it is).
  const std::string& staging_reason() const { return staging_reason_; }

 private:
  friend class CudaRuntime;
  CudaHostMemory() = default;
  CudaRuntime* runtime_ = nullptr;
  void* data_ = nullptr;
  uint64_t bytes_ = 0;
  bool registered_ = false;
  uint64_t generation_ = 0;
  std::string staging_reason_;
};

// Numbers for `jitd stats`.
struct CudaRuntimeStats {
  uint64_t pool_used_bytes = 0;
  uint64_t pool_reserved_bytes = 0;
  uint64_t device_free_bytes = 0;
  uint64_t device_total_bytes = 0;
  uint64_t pinned_bytes = 0;       // registered + staging
  uint64_t registered_bytes = 0;
  uint64_t staging_bytes = 0;
  uint64_t loaded_modules = 0;
  uint64_t context_resets = 0;
  std::string last_reset;          // what caused the last reset ("" = none)
  std::string lost;                // why this process cannot use the GPU any more ("" = it can)
};

class CudaRuntime {
 public:
  // Opens GPU `options.ordinal` through `symbols` (which must outlive the
  // runtime): cuInit, the device, its primary context, the pool. Errors
  // name the cause: "no CUDA device", "driver too old: ...", "cuInit: ...".
  static StatusOr<std::unique_ptr<CudaRuntime>> Open(const CudaSymbols& symbols,
                                                     CudaRuntimeOptions options = {});
  ~CudaRuntime();
  CudaRuntime(const CudaRuntime&) = delete;
  CudaRuntime& operator=(const CudaRuntime&) = delete;

  const CudaDeviceInfo& info() const { return info_; }
  const CudaSymbols& symbols() const { return symbols_; }
  CudaRuntimeStats stats() const;
  // Why the GPU is unusable in this process (stats().lost, without the
  // driver calls stats() makes); empty while it is usable.
  std::string lost() const;
  // Context generation: counts up at each reset.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // --- streams and events -------------------------------------------------
  StatusOr<std::unique_ptr<CudaStream>> CreateStream();
  // Records an event (from the pool) on `stream`; `timing` events (a pool
  // of their own) can be measured with ElapsedMillis.
  StatusOr<std::unique_ptr<CudaEvent>> RecordEvent(CudaStream& stream, bool timing = false);
  // GPU time between two completed timing events, in milliseconds.
  StatusOr<float> ElapsedMillis(const CudaEvent& start, const CudaEvent& end);
  // Waits for `event` / everything queued on `stream`.
  Status WaitEvent(const CudaEvent& event);
  Status Synchronize(CudaStream& stream);
  // Runs `body` with the context current on this thread and `stream`
  // ready, passing its handle: for library calls (cuBLASLt, cuFFT) that
  // queue work on the stream themselves. A driver error making the
  // context current fails as any call does; `body`'s status is returned,
  // unless it failed and the context is then found broken by a sticky
  // error (cuCtxSynchronize): then recovery runs as for a faulting kernel
  // and the call fails UNAVAILABLE naming the body's error and the reset.
  Status WithStream(CudaStream& stream, const std::function<Status(CUstream)>& body);
  // Events the pool holds free (for tests and stats).
  size_t free_events() const;

  // --- modules and launches -----------------------------------------------
  // Loads `cubin` and looks up `function_names` in it (NOT_FOUND naming a
  // missing kernel).
  StatusOr<std::shared_ptr<CudaModule>> LoadModule(std::string cubin,
                                                   std::vector<std::string> function_names);
  // Launches kernel `function` of `module`; `args[i]` points at the value
  // of kernel parameter i (cuLaunchKernel's kernelParams).
  Status Launch(const CudaModule& module, size_t function, Dim3 grid, Dim3 block,
                uint32_t shared_bytes, std::span<void* const> args, CudaStream& stream);

  // --- device memory ------------------------------------------------------
  // An account for one client; max_bytes 0 = no limit.
  std::shared_ptr<CudaMemoryAccount> CreateAccount(std::string client, uint64_t max_bytes);
  StatusOr<std::unique_ptr<CudaAllocation>> Allocate(std::shared_ptr<CudaMemoryAccount> account,
                                                 uint64_t bytes, CudaStream& stream);
  // FAILED_PRECONDITION when `buffer` was lost in a context reset.
  Status CheckAllocation(const CudaAllocation& buffer) const;

  // --- host memory and copies ---------------------------------------------
  // Registers [data, data + bytes) (a client's segment) for async copies.
  // Always succeeds unless the context is broken: past the pinned cap, or
  // when the driver refuses, the range is left unpinned and staged.
  StatusOr<std::unique_ptr<CudaHostMemory>> RegisterHost(void* data, uint64_t bytes);
  // Copies between host and device on `stream`. `host` (optional; unset:
  // the live registration holding the range, if any — a client segment
  // registered when it attached) is the
  // registration `src` / `dst` lies in: registered ranges copy directly and
  // asynchronously (the range must stay as it is until the stream passes
  // the copy: Synchronize or an event); others go through the staging
  // pool, where host->device returns once `src` may be reused and
  // device->host returns once `dst` holds the bytes.
  Status CopyToDevice(CUdeviceptr dst, const void* src, uint64_t bytes, CudaStream& stream,
                      const CudaHostMemory* host = nullptr);
  Status CopyToHost(void* dst, CUdeviceptr src, uint64_t bytes, CudaStream& stream,
                    const CudaHostMemory* host = nullptr);
  // Copies `bytes` from `src` to `dst` on the device, queued on `stream`.
  Status CopyOnDevice(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes, CudaStream& stream);

 private:
  friend class CudaStream;
  friend class CudaEvent;
  friend class CudaModule;
  friend class CudaAllocation;
  friend class CudaHostMemory;
  struct StagingChunk;

  CudaRuntime(const CudaSymbols& symbols, CudaRuntimeOptions options);
  Status Init();
  // Runs `body` (driver calls; returns the first failure and names it in
  // `what`) with the context current and shared; a failure goes to Fail.
  template <typename F>
  Status Guarded(F&& body);
  // Makes the context current on this thread (once per thread and
  // generation). Holds context_mu_ shared.
  CUresult MakeCurrentLocked(std::string& what);
  StagingChunk* AcquireChunk(bool* wait_first);
  CUresult RegisterLocked(CudaHostMemory& host, std::string& what);
  // The live registration holding [p, p + bytes), or null.
  const CudaHostMemory* FindHost(const void* p, uint64_t bytes) const;
  // The status of a failed driver call `result` during `what`. A sticky
  // error re-creates the context (once per generation `seen`); the caller
  // must not hold context_mu_.
  Status Fail(CUresult result, std::string_view what, uint64_t seen);
  // Makes a new context and reloads the modules; `unloaded` (when given)
  // says which did not load (each is tried again at its next launch).
  Status Reset(const std::string& cause, uint64_t seen, std::string* unloaded = nullptr);
  Status LoadModuleLocked(const CudaModule& module);
  Status ReloadModuleLocked(const CudaModule& module);
  Status EnsureStream(CudaStream& stream);
  void ReleaseStream(CudaStream& stream);
  void ReleaseEvent(CudaEvent& event);
  void ReleaseModule(CudaModule& module);
  void ReleaseAllocation(CudaAllocation& buffer);
  void ReleaseHost(CudaHostMemory& host);
  Status StagedCopyToDevice(CUdeviceptr dst, const void* src, uint64_t bytes, CudaStream& stream);
  Status StagedCopyToHost(void* dst, CUdeviceptr src, uint64_t bytes, CudaStream& stream);

  const CudaSymbols& symbols_;
  const CudaRuntimeOptions options_;
  CudaDeviceInfo info_;
  CUdevice device_ = 0;
  // Shared by every call that uses the context; exclusive while it resets.
  mutable std::shared_mutex context_mu_;
  CUcontext context_ = nullptr;
  std::atomic<uint64_t> generation_{1};
  CudaAllocator allocator_;

  mutable std::mutex mu_;  // below: events, modules, pinned bytes, reset log
  std::vector<CUevent> free_events_;
  std::vector<CUevent> free_timing_events_;
  std::vector<CudaModule*> modules_;
  uint64_t registered_bytes_ = 0;
  std::vector<const CudaHostMemory*> hosts_;  // live registrations (FindHost)
  uint64_t staging_bytes_ = 0;
  std::vector<std::unique_ptr<StagingChunk>> staging_;
  std::vector<CUstream> live_streams_;
  CUstream own_stream_ = nullptr;  // frees of buffers whose stream is gone
  const uint64_t id_;              // tells runtimes apart in thread-local state
  uint64_t resets_ = 0;
  std::string last_reset_;
  std::string lost_;  // set (under context_mu_) when a reset found no new context
};

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDA_RUNTIME_H_
