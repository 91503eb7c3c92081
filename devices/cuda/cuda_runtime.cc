#include "devices/cuda/cuda_runtime.h"

#include <algorithm>
#include <cstring>

#include "devices/cuda/cuda_status.h"

namespace jitd::devices::cuda {
namespace {

// Which runtime's context (and generation) is current on this thread, so
// cuCtxSetCurrent runs once per thread and context rather than per call.
thread_local uint64_t tl_current_runtime = 0;
thread_local uint64_t tl_current_generation = 0;

std::atomic<uint64_t> next_runtime_id{1};

// Free events kept for reuse; more are destroyed.
constexpr size_t kMaxFreeEvents = 256;

}  // namespace

struct CudaRuntime::StagingChunk {
  void* host = nullptr;
  uint64_t bytes = 0;
  CUevent done = nullptr;  // recorded after the copy that last used it
  bool pending = false;    // `done` recorded and maybe not reached
  bool in_use = false;     // a thread is filling or draining it
};

// --- handles ----------------------------------------------------------------

CudaStream::~CudaStream() {
  if (runtime_) runtime_->ReleaseStream(*this);
}
CudaEvent::~CudaEvent() {
  if (runtime_) runtime_->ReleaseEvent(*this);
}
CudaModule::~CudaModule() {
  if (runtime_) runtime_->ReleaseModule(*this);
}
CudaHostMemory::~CudaHostMemory() {
  if (runtime_) runtime_->ReleaseHost(*this);
}

// --- opening and closing ----------------------------------------------------

CudaRuntime::CudaRuntime(const CudaSymbols& symbols, CudaRuntimeOptions options)
    : symbols_(symbols),
      options_(options),
      allocator_(symbols, options.ordinal, options.allocator),
      id_(next_runtime_id.fetch_add(1)) {}

StatusOr<std::unique_ptr<CudaRuntime>> CudaRuntime::Open(const CudaSymbols& symbols,
                                                         CudaRuntimeOptions options) {
  std::unique_ptr<CudaRuntime> runtime(new CudaRuntime(symbols, options));
  JITD_RETURN_IF_ERROR(runtime->Init());
  return runtime;
}

Status CudaRuntime::Init() {
  const CudaSymbols& s = symbols_;
  CUresult r = s.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) return Status(StatusCode::kUnavailable, "no CUDA device");
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    return Status(StatusCode::kFailedPrecondition,
                  "the loaded libcuda is the CUDA toolkit's stub, not a driver");
  }
  if (r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) {
    return Status(StatusCode::kFailedPrecondition,
                  "driver too old: cuInit: " + CudaErrorText(s, r));
  }
  JITD_CUDA_RETURN_IF_ERROR(s, r, "cuInit");
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuDriverGetVersion(&info_.driver_version), "cuDriverGetVersion");
  if (info_.driver_version < 12000) {
    return Status(StatusCode::kFailedPrecondition,
                  "driver too old: CUDA " + std::to_string(info_.driver_version / 1000) + "." +
                      std::to_string(info_.driver_version % 1000 / 10) +
                      " driver (jitd needs 12.0 or newer)");
  }
  int count = 0;
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) return Status(StatusCode::kUnavailable, "no CUDA device");
  if (options_.ordinal < 0 || options_.ordinal >= count) {
    return NotFound("no CUDA device " + std::to_string(options_.ordinal) + " (this machine has " +
                    std::to_string(count) + ")");
  }
  info_.ordinal = options_.ordinal;
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuDeviceGet(&device_, options_.ordinal), "cuDeviceGet");
  char name[256] = {};
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
  info_.name = name;
  size_t total = 0;
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuDeviceTotalMem(&total, device_), "cuDeviceTotalMem");
  info_.total_bytes = total;
  JITD_CUDA_RETURN_IF_ERROR(
      s, s.cuDeviceGetAttribute(&info_.sm_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
      "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  JITD_CUDA_RETURN_IF_ERROR(
      s, s.cuDeviceGetAttribute(&info_.sm_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
      "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  JITD_CUDA_RETURN_IF_ERROR(
      s, s.cuDeviceGetAttribute(&info_.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_),
      "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  int pools = 0;
  JITD_CUDA_RETURN_IF_ERROR(
      s, s.cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device_),
      "cuDeviceGetAttribute(MEMORY_POOLS_SUPPORTED)");
  if (!pools) {
    return Status(StatusCode::kFailedPrecondition,
                  "GPU " + std::to_string(options_.ordinal) + " (" + info_.name +
                      ") has no memory pools (cuMemAllocFromPoolAsync), which jitd needs");
  }
  std::unique_lock lock(context_mu_);
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuDevicePrimaryCtxRetain(&context_, device_),
                            "cuDevicePrimaryCtxRetain on GPU " + std::to_string(options_.ordinal));
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  tl_current_runtime = id_;
  tl_current_generation = generation();
  JITD_RETURN_IF_ERROR(allocator_.CreatePool());
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuStreamCreate(&own_stream_, CU_STREAM_NON_BLOCKING),
                            "cuStreamCreate");
  return Status::Ok();
}

CudaRuntime::~CudaRuntime() {
  std::unique_lock lock(context_mu_);
  if (!context_) return;
  std::string what;
  if (MakeCurrentLocked(what) != CUDA_SUCCESS) return;
  if (own_stream_) (void)symbols_.cuStreamSynchronize(own_stream_);
  allocator_.DestroyPool();
  for (CUevent e : free_events_) (void)symbols_.cuEventDestroy(e);
  for (CUevent e : free_timing_events_) (void)symbols_.cuEventDestroy(e);
  for (auto& chunk : staging_) {
    if (chunk->done) (void)symbols_.cuEventDestroy(chunk->done);
    (void)symbols_.cuMemFreeHost(chunk->host);
  }
  if (own_stream_) (void)symbols_.cuStreamDestroy(own_stream_);
  (void)symbols_.cuDevicePrimaryCtxRelease(device_);
  if (tl_current_runtime == id_) tl_current_runtime = 0;
}

// --- the context and recovery -------------------------------------------------

CUresult CudaRuntime::MakeCurrentLocked(std::string& what) {
  if (!context_) {
    what = "the GPU is unusable in this process: " + lost_;
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  }
  const uint64_t gen = generation();
  if (tl_current_runtime == id_ && tl_current_generation == gen) return CUDA_SUCCESS;
  CUresult r = symbols_.cuCtxSetCurrent(context_);
  if (r != CUDA_SUCCESS) {
    what = "cuCtxSetCurrent";
    return r;
  }
  tl_current_runtime = id_;
  tl_current_generation = gen;
  return CUDA_SUCCESS;
}

template <typename F>
Status CudaRuntime::Guarded(F&& body) {
  uint64_t seen = 0;
  std::string what;
  CUresult r = CUDA_SUCCESS;
  {
    std::shared_lock lock(context_mu_);
    seen = generation();
    r = MakeCurrentLocked(what);
    if (r == CUDA_SUCCESS) r = body(what);
  }
  if (r == CUDA_SUCCESS) return Status::Ok();
  return Fail(r, what, seen);
}

Status CudaRuntime::Fail(CUresult result, std::string_view what, uint64_t seen) {
  Status status = CudaStatus(symbols_, result, what);
  if (!IsStickyError(result)) return status;
  {
    std::shared_lock lock(context_mu_);
    // Lost already: the message names the first error; no reset again.
    if (!lost_.empty()) return Status(StatusCode::kUnavailable, status.message());
  }
  std::string unloaded;
  Status reset = Reset(status.message(), seen, &unloaded);
  std::string message = status.message() +
                        "; the GPU's context was reset: work in flight on every stream failed "
                        "and device buffers made before were lost";
  if (!reset.ok()) {
    message += "; re-creating the context failed: " + reset.message();
    std::shared_lock lock(context_mu_);
    if (!lost_.empty()) {
      message += "; only a new process can use the GPU (the daemon: `jitd stop`, and the next client starts one)";
    }
  } else if (!unloaded.empty()) {
    message += "; new work runs, but some modules did not load again (" + unloaded +
               "): each is tried again at its next launch";
  } else {
    message += "; modules were reloaded, new work runs";
  }
  return Status(StatusCode::kUnavailable, std::move(message));
}

Status CudaRuntime::Reset(const std::string& cause, uint64_t seen, std::string* unloaded) {
  std::unique_lock lock(context_mu_);
  // Another call reset it already (or found no new context).
  if (generation() != seen) return lost_.empty() ? Status::Ok() : Status(StatusCode::kUnavailable, lost_);
  const CudaSymbols& s = symbols_;
  std::lock_guard<std::mutex> state(mu_);
  // Everything made in the old context dies with it: forget, don't free.
  allocator_.ForgetPool();
  free_events_.clear();
  free_timing_events_.clear();
  staging_.clear();
  staging_bytes_ = 0;
  live_streams_.clear();
  own_stream_ = nullptr;
  for (CudaModule* m : modules_) {
    m->module_ = nullptr;
    std::fill(m->functions_.begin(), m->functions_.end(), nullptr);
  }
  ++resets_;
  last_reset_ = cause;
  generation_.fetch_add(1, std::memory_order_acq_rel);
  tl_current_runtime = 0;

  (void)s.cuDevicePrimaryCtxRelease(device_);
  context_ = nullptr;
  // No new context: the GPU is lost for this process (said by every later
  // call; no reset tried again). Set here, under the lock, so that a call
  // that met the same error meanwhile sees it.
  auto lose = [&](const Status& why) {
    lost_ = "after " + cause + " the CUDA driver made no new context (" + why.message() +
            "); only a new process can use the GPU (the daemon: `jitd stop`, and the next client starts one)";
    return why;
  };
  if (CUresult r = s.cuDevicePrimaryCtxReset(device_); r != CUDA_SUCCESS) {
    return lose(CudaStatus(s, r, "cuDevicePrimaryCtxReset"));
  }
  CUcontext context = nullptr;
  if (CUresult r = s.cuDevicePrimaryCtxRetain(&context, device_); r != CUDA_SUCCESS) {
    return lose(CudaStatus(s, r, "cuDevicePrimaryCtxRetain"));
  }
  context_ = context;
  std::string what;
  JITD_CUDA_RETURN_IF_ERROR(s, MakeCurrentLocked(what), what);
  JITD_RETURN_IF_ERROR(allocator_.CreatePool());
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuStreamCreate(&own_stream_, CU_STREAM_NON_BLOCKING),
                            "cuStreamCreate");
  std::string failed;
  for (CudaModule* m : modules_) {
    Status loaded = LoadModuleLocked(*m);
    if (!loaded.ok()) failed += (failed.empty() ? "" : "; ") + loaded.message();
  }
  // The context works: each module that did not load is loaded again at
  // its next launch (ReloadModuleLocked).
  if (unloaded != nullptr) *unloaded = std::move(failed);
  return Status::Ok();
}

// --- streams and events -------------------------------------------------------

StatusOr<std::unique_ptr<CudaStream>> CudaRuntime::CreateStream() {
  std::unique_ptr<CudaStream> stream(new CudaStream());
  stream->runtime_ = this;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string& what) -> CUresult {
    CUresult r = symbols_.cuStreamCreate(&stream->stream_, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
      what = "cuStreamCreate";
      stream->stream_ = nullptr;
      return r;
    }
    stream->generation_ = generation();
    std::lock_guard<std::mutex> state(mu_);
    live_streams_.push_back(stream->stream_);
    return CUDA_SUCCESS;
  }));
  return stream;
}

// Re-creates `stream` after a reset. Holds context_mu_ shared.
Status CudaRuntime::EnsureStream(CudaStream& stream) {
  if (stream.generation_ == generation() && stream.stream_) return Status::Ok();
  CUstream handle = nullptr;
  JITD_CUDA_RETURN_IF_ERROR(symbols_, symbols_.cuStreamCreate(&handle, CU_STREAM_NON_BLOCKING),
                            "cuStreamCreate");
  stream.stream_ = handle;
  stream.generation_ = generation();
  std::lock_guard<std::mutex> state(mu_);
  live_streams_.push_back(handle);
  return Status::Ok();
}

void CudaRuntime::ReleaseStream(CudaStream& stream) {
  std::shared_lock lock(context_mu_);
  if (!stream.stream_ || stream.generation_ != generation()) return;
  std::string what;
  if (MakeCurrentLocked(what) != CUDA_SUCCESS) return;
  // Its work finishes first, so buffers it used may be freed on any stream.
  (void)symbols_.cuStreamSynchronize(stream.stream_);
  (void)symbols_.cuStreamDestroy(stream.stream_);
  std::lock_guard<std::mutex> state(mu_);
  live_streams_.erase(std::remove(live_streams_.begin(), live_streams_.end(), stream.stream_),
                      live_streams_.end());
}

StatusOr<std::unique_ptr<CudaEvent>> CudaRuntime::RecordEvent(CudaStream& stream, bool timing) {
  std::unique_ptr<CudaEvent> event(new CudaEvent());
  Status ensured;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string& what) -> CUresult {
    ensured = EnsureStream(stream);
    if (!ensured.ok()) return CUDA_SUCCESS;
    {
      std::lock_guard<std::mutex> state(mu_);
      std::vector<CUevent>& pool = timing ? free_timing_events_ : free_events_;
      if (!pool.empty()) {
        event->event_ = pool.back();
        pool.pop_back();
      }
    }
    event->timing_ = timing;
    if (!event->event_) {
      CUresult r = symbols_.cuEventCreate(&event->event_, timing ? CU_EVENT_DEFAULT
                                                                 : CU_EVENT_DISABLE_TIMING);
      if (r != CUDA_SUCCESS) {
        what = "cuEventCreate";
        event->event_ = nullptr;
        return r;
      }
    }
    event->runtime_ = this;
    event->generation_ = generation();
    what = "cuEventRecord";
    return symbols_.cuEventRecord(event->event_, stream.stream_);
  }));
  JITD_RETURN_IF_ERROR(ensured);
  return event;
}

Status CudaRuntime::WaitEvent(const CudaEvent& event) {
  if (event.generation_ != generation()) {
    return Status(StatusCode::kUnavailable, "the event was lost in a context reset");
  }
  return Guarded([&](std::string& what) -> CUresult {
    what = "cuEventSynchronize";
    return symbols_.cuEventSynchronize(event.event_);
  });
}

StatusOr<float> CudaRuntime::ElapsedMillis(const CudaEvent& start, const CudaEvent& end) {
  if (!start.timing_ || !end.timing_) {
    return InvalidArgument("ElapsedMillis: both events must be timing events");
  }
  if (start.generation_ != generation() || end.generation_ != generation()) {
    return Status(StatusCode::kUnavailable, "the events were lost in a context reset");
  }
  float ms = 0;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string& what) -> CUresult {
    what = "cuEventElapsedTime";
    return symbols_.cuEventElapsedTime(&ms, start.event_, end.event_);
  }));
  return ms;
}

void CudaRuntime::ReleaseEvent(CudaEvent& event) {
  std::shared_lock lock(context_mu_);
  if (!event.event_ || event.generation_ != generation()) return;
  {
    std::lock_guard<std::mutex> state(mu_);
    std::vector<CUevent>& pool = event.timing_ ? free_timing_events_ : free_events_;
    if (pool.size() < kMaxFreeEvents) {
      pool.push_back(event.event_);
      return;
    }
  }
  std::string what;
  if (MakeCurrentLocked(what) == CUDA_SUCCESS) (void)symbols_.cuEventDestroy(event.event_);
}

size_t CudaRuntime::free_events() const {
  std::lock_guard<std::mutex> state(mu_);
  return free_events_.size();
}

Status CudaRuntime::Synchronize(CudaStream& stream) {
  Status ensured;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string& what) -> CUresult {
    ensured = EnsureStream(stream);
    if (!ensured.ok()) return CUDA_SUCCESS;
    what = "cuStreamSynchronize";
    return symbols_.cuStreamSynchronize(stream.stream_);
  }));
  return ensured;
}

Status CudaRuntime::WithStream(CudaStream& stream, const std::function<Status(CUstream)>& body) {
  Status result;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string& what) -> CUresult {
    result = EnsureStream(stream);
    if (result.ok()) result = body(stream.stream_);
    if (result.ok()) return CUDA_SUCCESS;
    // A library call (cuBLASLt, cuDNN, cuFFT) that failed may have met a
    // sticky error, or made one (a fault in its kernel): ask the driver.
    // A sticky error goes through recovery as a faulting kernel's does
    // (Fail: the context is re-created, work in flight fails, library
    // handles and plans are made again at their next use, keyed by the
    // generation); anything else is the body's own failure.
    const CUresult probe = symbols_.cuCtxSynchronize();
    if (!IsStickyError(probe)) return CUDA_SUCCESS;
    what = result.message() + "; the context is broken (cuCtxSynchronize after it)";
    return probe;
  }));
  return result;
}

// --- modules and launches -----------------------------------------------------

// Loads `module`'s image in the current context. Holds context_mu_
// (shared: with module.reload_mu_ unless no launch can see the module yet).
Status CudaRuntime::LoadModuleLocked(const CudaModule& module) {
  const CudaSymbols& s = symbols_;
  CUmodule handle = nullptr;
  JITD_CUDA_RETURN_IF_ERROR(s, s.cuModuleLoadData(&handle, module.image_.data()),
                            "cuModuleLoadData (" + std::to_string(module.image_.size()) +
                                " bytes of cubin)");
  std::vector<CUfunction> functions(module.names_.size());
  for (size_t i = 0; i < module.names_.size(); ++i) {
    CUresult r = s.cuModuleGetFunction(&functions[i], handle, module.names_[i].c_str());
    if (r != CUDA_SUCCESS) {
      (void)s.cuModuleUnload(handle);
      if (r == CUDA_ERROR_NOT_FOUND) {
        return NotFound("kernel '" + module.names_[i] + "' is not in the module (" +
                        std::to_string(module.image_.size()) + " bytes of cubin)");
      }
      return CudaStatus(s, r, "cuModuleGetFunction('" + module.names_[i] + "')");
    }
  }
  module.module_ = handle;
  module.functions_ = std::move(functions);
  module.generation_.store(generation(), std::memory_order_release);
  return Status::Ok();
}

// A module that a reset could not reload (its load failed then), loaded
// again at its next launch. Holds context_mu_ shared.
Status CudaRuntime::ReloadModuleLocked(const CudaModule& module) {
  std::lock_guard<std::mutex> reload(module.reload_mu_);
  if (module.generation_.load(std::memory_order_acquire) == generation()) return Status::Ok();
  return LoadModuleLocked(module);
}

StatusOr<std::shared_ptr<CudaModule>> CudaRuntime::LoadModule(
    std::string cubin, std::vector<std::string> function_names) {
  if (cubin.empty()) return InvalidArgument("LoadModule: the cubin is empty");
  std::shared_ptr<CudaModule> module(new CudaModule());
  module->image_ = std::move(cubin);
  module->names_ = std::move(function_names);
  Status loaded;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string&) -> CUresult {
    loaded = LoadModuleLocked(*module);
    if (!loaded.ok()) return CUDA_SUCCESS;
    module->runtime_ = this;
    std::lock_guard<std::mutex> state(mu_);
    modules_.push_back(module.get());
    return CUDA_SUCCESS;
  }));
  JITD_RETURN_IF_ERROR(loaded);
  return module;
}

void CudaRuntime::ReleaseModule(CudaModule& module) {
  std::shared_lock lock(context_mu_);
  {
    std::lock_guard<std::mutex> state(mu_);
    modules_.erase(std::remove(modules_.begin(), modules_.end(), &module), modules_.end());
  }
  if (module.generation_.load(std::memory_order_acquire) != generation() || !module.module_) return;
  std::string what;
  if (MakeCurrentLocked(what) == CUDA_SUCCESS) (void)symbols_.cuModuleUnload(module.module_);
}

Status CudaRuntime::Launch(const CudaModule& module, size_t function, Dim3 grid, Dim3 block,
                           uint32_t shared_bytes, std::span<void* const> args,
                           CudaStream& stream) {
  if (function >= module.names_.size()) {
    return InvalidArgument("Launch: kernel " + std::to_string(function) + " of a module with " +
                           std::to_string(module.names_.size()));
  }
  Status checked;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string& what) -> CUresult {
    if (module.generation_.load(std::memory_order_acquire) != generation()) {
      // The reset could not reload it: again now, or say why not.
      if (Status reloaded = ReloadModuleLocked(module); !reloaded.ok()) {
        checked = Status(StatusCode::kFailedPrecondition,
                         "Launch: the module of kernel '" + module.names_[function] +
                             "' could not be loaded again after the context reset (" + last_reset_ +
                             "): " + reloaded.message());
        return CUDA_SUCCESS;
      }
    }
    checked = EnsureStream(stream);
    if (!checked.ok()) return CUDA_SUCCESS;
    what = "cuLaunchKernel('" + module.names_[function] + "', grid " + std::to_string(grid.x) +
           "x" + std::to_string(grid.y) + "x" + std::to_string(grid.z) + ", block " +
           std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
           std::to_string(block.z) + ")";
    return symbols_.cuLaunchKernel(module.functions_[function], grid.x, grid.y, grid.z, block.x,
                                   block.y, block.z, shared_bytes, stream.stream_,
                                   const_cast<void**>(args.data()), nullptr);
  }));
  return checked;
}

// --- device memory ------------------------------------------------------------

std::shared_ptr<CudaMemoryAccount> CudaRuntime::CreateAccount(std::string client,
                                                              uint64_t max_bytes) {
  return std::make_shared<CudaMemoryAccount>(std::move(client), max_bytes);
}

StatusOr<std::unique_ptr<CudaAllocation>> CudaRuntime::Allocate(
    std::shared_ptr<CudaMemoryAccount> account, uint64_t bytes, CudaStream& stream) {
  StatusOr<std::unique_ptr<CudaAllocation>> buffer = Status(StatusCode::kInternal, "not allocated");
  uint64_t seen = 0;
  CUresult r = CUDA_SUCCESS;
  {
    std::shared_lock lock(context_mu_);
    seen = generation();
    std::string what;
    r = MakeCurrentLocked(what);
    if (r != CUDA_SUCCESS) {
      lock.unlock();
      return Fail(r, what, seen);
    }
    JITD_RETURN_IF_ERROR(EnsureStream(stream));
    buffer = allocator_.Allocate(this, std::move(account), bytes, stream.stream_, seen, &r);
  }
  if (IsStickyError(r)) return Fail(r, "cuMemAllocFromPoolAsync", seen);
  return buffer;
}

Status CudaRuntime::CheckAllocation(const CudaAllocation& buffer) const {
  if (buffer.generation_ == generation()) return Status::Ok();
  std::lock_guard<std::mutex> state(mu_);
  return Status(StatusCode::kFailedPrecondition,
                "device buffer of " + std::to_string(buffer.bytes_) +
                    " bytes was lost when the GPU's context was reset (" + last_reset_ + ")");
}

void CudaRuntime::ReleaseAllocation(CudaAllocation& buffer) {
  std::shared_lock lock(context_mu_);
  if (!buffer.pointer_ || buffer.generation_ != generation()) return;
  std::string what;
  if (MakeCurrentLocked(what) != CUDA_SUCCESS) return;
  CUstream stream = own_stream_;
  {
    std::lock_guard<std::mutex> state(mu_);
    if (std::find(live_streams_.begin(), live_streams_.end(), buffer.free_stream_) !=
        live_streams_.end()) {
      stream = buffer.free_stream_;
    }
  }
  (void)allocator_.Free(buffer.pointer_, stream);
}

// --- host memory and copies ---------------------------------------------------

// Pins `host` if the cap allows. Holds context_mu_ shared. A refusal
// leaves it staged (not an error); a sticky error is returned.
CUresult CudaRuntime::RegisterLocked(CudaHostMemory& host, std::string& what) {
  {
    std::lock_guard<std::mutex> state(mu_);
    if (host.registered_) {  // pinned in a context that was reset: counted again below
      registered_bytes_ -= host.bytes_;
      host.registered_ = false;
    }
    const uint64_t pinned = registered_bytes_ + staging_bytes_;
    if (pinned + host.bytes_ > options_.max_pinned_bytes) {
      host.staging_reason_ = "pinning " + std::to_string(host.bytes_) + " more bytes would pass "
                             "the cap on pinned host memory (" + std::to_string(pinned) + " of " +
                             std::to_string(options_.max_pinned_bytes) + " pinned)";
      host.registered_ = false;
      return CUDA_SUCCESS;
    }
    registered_bytes_ += host.bytes_;
  }
  CUresult r = symbols_.cuMemHostRegister(host.data_, host.bytes_, 0);
  if (r != CUDA_SUCCESS) {
    std::lock_guard<std::mutex> state(mu_);
    registered_bytes_ -= host.bytes_;
    host.registered_ = false;
    host.staging_reason_ = "cuMemHostRegister: " + CudaErrorText(symbols_, r);
    if (IsStickyError(r)) {
      what = "cuMemHostRegister";
      return r;
    }
    return CUDA_SUCCESS;
  }
  host.registered_ = true;
  host.staging_reason_.clear();
  host.generation_ = generation();
  return CUDA_SUCCESS;
}

StatusOr<std::unique_ptr<CudaHostMemory>> CudaRuntime::RegisterHost(void* data, uint64_t bytes) {
  if (!data || bytes == 0) return InvalidArgument("RegisterHost: an empty host range");
  std::unique_ptr<CudaHostMemory> host(new CudaHostMemory());
  host->runtime_ = this;
  host->data_ = data;
  host->bytes_ = bytes;
  host->generation_ = generation();
  JITD_RETURN_IF_ERROR(
      Guarded([&](std::string& what) -> CUresult { return RegisterLocked(*host, what); }));
  std::lock_guard<std::mutex> state(mu_);
  hosts_.push_back(host.get());
  return host;
}

const CudaHostMemory* CudaRuntime::FindHost(const void* p, uint64_t bytes) const {
  std::lock_guard<std::mutex> state(mu_);
  for (const CudaHostMemory* host : hosts_) {
    const char* begin = static_cast<const char*>(host->data_);
    const char* q = static_cast<const char*>(p);
    if (q >= begin && bytes <= host->bytes_ && static_cast<uint64_t>(q - begin) <= host->bytes_ - bytes) {
      return host;
    }
  }
  return nullptr;
}

void CudaRuntime::ReleaseHost(CudaHostMemory& host) {
  {
    std::lock_guard<std::mutex> state(mu_);
    std::erase(hosts_, &host);
  }
  std::shared_lock lock(context_mu_);
  if (!host.registered_) return;
  {
    std::lock_guard<std::mutex> state(mu_);
    registered_bytes_ -= host.bytes_;
  }
  if (host.generation_ != generation()) return;  // unregistered by the reset
  std::string what;
  if (MakeCurrentLocked(what) == CUDA_SUCCESS) (void)symbols_.cuMemHostUnregister(host.data_);
}

// A free staging chunk (marked in use), allocating one while the cap
// allows; else the oldest pending one with *wait_first set (its copy must be
// waited for); nullptr when every chunk is busy or none can be made. Holds
// context_mu_ shared.
CudaRuntime::StagingChunk* CudaRuntime::AcquireChunk(bool* wait_first) {
  *wait_first = false;
  std::lock_guard<std::mutex> state(mu_);
  StagingChunk* pending = nullptr;
  for (auto& chunk : staging_) {
    if (chunk->in_use) continue;
    if (!chunk->pending || symbols_.cuEventQuery(chunk->done) == CUDA_SUCCESS) {
      chunk->pending = false;
      chunk->in_use = true;
      return chunk.get();
    }
    if (!pending) pending = chunk.get();
  }
  const uint64_t size = options_.staging_chunk_bytes;
  if (size > 0 && registered_bytes_ + staging_bytes_ + size <= options_.max_pinned_bytes) {
    auto chunk = std::make_unique<StagingChunk>();
    if (symbols_.cuMemAllocHost(&chunk->host, size) == CUDA_SUCCESS) {
      if (symbols_.cuEventCreate(&chunk->done, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS) {
        chunk->bytes = size;
        chunk->in_use = true;
        staging_bytes_ += size;
        staging_.push_back(std::move(chunk));
        return staging_.back().get();
      }
      (void)symbols_.cuMemFreeHost(chunk->host);
    }
  }
  if (pending) {
    pending->in_use = true;
    *wait_first = true;
  }
  return pending;
}

Status CudaRuntime::StagedCopyToDevice(CUdeviceptr dst, const void* src, uint64_t bytes,
                                       CudaStream& stream) {
  return Guarded([&](std::string& what) -> CUresult {
    uint64_t done = 0;
    while (done < bytes) {
      bool wait_first = false;
      StagingChunk* chunk = AcquireChunk(&wait_first);
      if (!chunk) {
        // No pinned memory to stage through: the driver copies from
        // pageable memory, returning once `src` may be reused.
        what = "cuMemcpyHtoDAsync (pageable)";
        return symbols_.cuMemcpyHtoDAsync(dst + done, static_cast<const char*>(src) + done,
                                          bytes - done, stream.stream_);
      }
      CUresult r = wait_first ? symbols_.cuEventSynchronize(chunk->done) : CUDA_SUCCESS;
      const uint64_t n = std::min<uint64_t>(chunk->bytes, bytes - done);
      if (r == CUDA_SUCCESS) {
        std::memcpy(chunk->host, static_cast<const char*>(src) + done, n);
        r = symbols_.cuMemcpyHtoDAsync(dst + done, chunk->host, n, stream.stream_);
      }
      if (r == CUDA_SUCCESS) r = symbols_.cuEventRecord(chunk->done, stream.stream_);
      {
        std::lock_guard<std::mutex> state(mu_);
        chunk->in_use = false;
        chunk->pending = r == CUDA_SUCCESS;
      }
      if (r != CUDA_SUCCESS) {
        what = "staged cuMemcpyHtoDAsync";
        return r;
      }
      done += n;
    }
    return CUDA_SUCCESS;
  });
}

Status CudaRuntime::StagedCopyToHost(void* dst, CUdeviceptr src, uint64_t bytes,
                                     CudaStream& stream) {
  return Guarded([&](std::string& what) -> CUresult {
    uint64_t done = 0;
    while (done < bytes) {
      bool wait_first = false;
      StagingChunk* chunk = AcquireChunk(&wait_first);
      if (!chunk) {
        what = "cuMemcpyDtoHAsync (pageable)";
        CUresult r = symbols_.cuMemcpyDtoHAsync(static_cast<char*>(dst) + done, src + done,
                                                bytes - done, stream.stream_);
        return r == CUDA_SUCCESS ? symbols_.cuStreamSynchronize(stream.stream_) : r;
      }
      CUresult r = wait_first ? symbols_.cuEventSynchronize(chunk->done) : CUDA_SUCCESS;
      const uint64_t n = std::min<uint64_t>(chunk->bytes, bytes - done);
      if (r == CUDA_SUCCESS) r = symbols_.cuMemcpyDtoHAsync(chunk->host, src + done, n, stream.stream_);
      if (r == CUDA_SUCCESS) r = symbols_.cuEventRecord(chunk->done, stream.stream_);
      if (r == CUDA_SUCCESS) r = symbols_.cuEventSynchronize(chunk->done);
      if (r == CUDA_SUCCESS) std::memcpy(static_cast<char*>(dst) + done, chunk->host, n);
      {
        std::lock_guard<std::mutex> state(mu_);
        chunk->in_use = false;
        chunk->pending = false;
      }
      if (r != CUDA_SUCCESS) {
        what = "staged cuMemcpyDtoHAsync";
        return r;
      }
      done += n;
    }
    return CUDA_SUCCESS;
  });
}

namespace {
bool Inside(const CudaHostMemory* host, const void* p, uint64_t bytes) {
  if (!host) return false;
  const char* begin = static_cast<const char*>(host->data());
  const char* q = static_cast<const char*>(p);
  return q >= begin && bytes <= host->bytes() && static_cast<uint64_t>(q - begin) <= host->bytes() - bytes;
}
}  // namespace

Status CudaRuntime::CopyToDevice(CUdeviceptr dst, const void* src, uint64_t bytes,
                                 CudaStream& stream, const CudaHostMemory* host) {
  if (bytes == 0) return Status::Ok();
  if (host == nullptr) host = FindHost(src, bytes);  // a client segment registered at attach
  Status checked;
  bool direct = false;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string& what) -> CUresult {
    checked = EnsureStream(stream);
    if (!checked.ok()) return CUDA_SUCCESS;
    if (Inside(host, src, bytes) && host->registered_) {
      if (host->generation_ != generation()) {
        // Registered in a context that was reset: pin it again.
        CUresult r = RegisterLocked(const_cast<CudaHostMemory&>(*host), what);
        if (r != CUDA_SUCCESS) return r;
      }
      if (host->registered_) {
        direct = true;
        what = "cuMemcpyHtoDAsync";
        return symbols_.cuMemcpyHtoDAsync(dst, src, bytes, stream.stream_);
      }
    }
    return CUDA_SUCCESS;
  }));
  JITD_RETURN_IF_ERROR(checked);
  if (direct) return Status::Ok();
  return StagedCopyToDevice(dst, src, bytes, stream);
}

Status CudaRuntime::CopyOnDevice(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes, CudaStream& stream) {
  if (bytes == 0 || dst == src) return Status::Ok();
  Status checked;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string& what) -> CUresult {
    checked = EnsureStream(stream);
    if (!checked.ok()) return CUDA_SUCCESS;
    what = "cuMemcpyDtoDAsync";
    return symbols_.cuMemcpyDtoDAsync(dst, src, bytes, stream.stream_);
  }));
  return checked;
}

Status CudaRuntime::CopyToHost(void* dst, CUdeviceptr src, uint64_t bytes, CudaStream& stream,
                               const CudaHostMemory* host) {
  if (bytes == 0) return Status::Ok();
  if (host == nullptr) host = FindHost(dst, bytes);
  Status checked;
  bool direct = false;
  JITD_RETURN_IF_ERROR(Guarded([&](std::string& what) -> CUresult {
    checked = EnsureStream(stream);
    if (!checked.ok()) return CUDA_SUCCESS;
    if (Inside(host, dst, bytes) && host->registered_) {
      if (host->generation_ != generation()) {
        CUresult r = RegisterLocked(const_cast<CudaHostMemory&>(*host), what);
        if (r != CUDA_SUCCESS) return r;
      }
      if (host->registered_) {
        direct = true;
        what = "cuMemcpyDtoHAsync";
        return symbols_.cuMemcpyDtoHAsync(dst, src, bytes, stream.stream_);
      }
    }
    return CUDA_SUCCESS;
  }));
  JITD_RETURN_IF_ERROR(checked);
  if (direct) return Status::Ok();
  return StagedCopyToHost(dst, src, bytes, stream);
}

// --- stats ----------------------------------------------------------------------

std::string CudaRuntime::lost() const {
  std::shared_lock lock(context_mu_);
  return lost_;
}

CudaRuntimeStats CudaRuntime::stats() const {
  CudaRuntimeStats out;
  {
    std::shared_lock lock(context_mu_);
    out.lost = lost_;
    CudaPoolUsage usage = allocator_.usage();
    out.pool_used_bytes = usage.used_bytes;
    out.pool_reserved_bytes = usage.reserved_bytes;
    std::string what;
    if (const_cast<CudaRuntime*>(this)->MakeCurrentLocked(what) == CUDA_SUCCESS) {
      size_t free_bytes = 0, total_bytes = 0;
      if (symbols_.cuMemGetInfo(&free_bytes, &total_bytes) == CUDA_SUCCESS) {
        out.device_free_bytes = free_bytes;
        out.device_total_bytes = total_bytes;
      }
    }
  }
  std::lock_guard<std::mutex> state(mu_);
  out.registered_bytes = registered_bytes_;
  out.staging_bytes = staging_bytes_;
  out.pinned_bytes = registered_bytes_ + staging_bytes_;
  out.loaded_modules = modules_.size();
  out.context_resets = resets_;
  out.last_reset = last_reset_;
  if (out.device_total_bytes == 0) out.device_total_bytes = info_.total_bytes;
  return out;
}

}  // namespace jitd::devices::cuda
