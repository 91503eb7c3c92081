#include "devices/cuda/fake_driver.h"

#include <cstdlib>
#include <cstring>

namespace jitd::devices::cuda {

struct FakeDriver::State {
  FakeDriverOptions options;
  mutable std::mutex mu;
  std::map<std::string, int, std::less<>> calls;
  std::map<std::string, Kernel> kernels;
  CUresult host_register_result = CUDA_SUCCESS;
  CUresult module_load_result = CUDA_SUCCESS;  // for the next module_load_failures loads
  int module_load_failures = 0;
  bool initialized = false;
  CUresult sticky = CUDA_SUCCESS;  // the context is broken while set
  CUresult process_sticky = CUDA_SUCCESS;  // options.sticky_errors_outlive_reset: the first one
  int epoch = 1;                   // counts up at each context reset
  int retained = 0;
  int resets = 0;
  uintptr_t next_handle = 0x100;
  // Alive in the current context.
  std::set<uintptr_t> streams, events, pools;
  std::map<uintptr_t, std::vector<std::string>> modules;  // -> kernel names
  std::map<uintptr_t, std::pair<uintptr_t, std::string>> functions;  // -> module, name
  std::map<uintptr_t, uint64_t> allocations;  // device pointer -> bytes
  std::map<uintptr_t, uint64_t> registered;   // host pointer -> bytes
  std::map<uintptr_t, uint64_t> pinned;       // cuMemAllocHost pointer -> bytes
  std::vector<unsigned> register_flags;
  std::vector<std::string> launched;  // kernel names, in launch order
  std::map<uintptr_t, unsigned> event_flags;
  std::map<uintptr_t, size_t> event_stamp;  // launches before its last record
  uint64_t release_threshold = 0;

  CUcontext context() const { return reinterpret_cast<CUcontext>(uintptr_t{0x10000} + epoch); }
  uintptr_t NewHandle() { return next_handle += 16; }
  uint64_t DeviceBytes() const {
    uint64_t n = 0;
    for (const auto& [p, b] : allocations) n += b;
    return n;
  }
  // Frees a pool allocation's host memory (options.allocation_offset bytes before it).
  void FreeDevice(uintptr_t p) const { std::free(reinterpret_cast<char*>(p) - options.allocation_offset); }
  // Frees everything the context held (the reset).
  void DropContext() {
    for (const auto& [p, b] : allocations) FreeDevice(p);
    for (const auto& [p, b] : pinned) std::free(reinterpret_cast<void*>(p));
    allocations.clear();
    pinned.clear();
    registered.clear();
    streams.clear();
    events.clear();
    event_flags.clear();
    event_stamp.clear();
    pools.clear();
    modules.clear();
    functions.clear();
    if (options.sticky_errors_outlive_reset && process_sticky == CUDA_SUCCESS) process_sticky = sticky;
    sticky = CUDA_SUCCESS;
    ++epoch;
  }
};

namespace {

FakeDriver::State* g_state = nullptr;
thread_local CUcontext tl_context = nullptr;

// Counts the call and checks what every context call needs.
#define FAKE_ENTER(name)                                  \
  FakeDriver::State& st = *g_state;                       \
  std::lock_guard<std::mutex> lock(st.mu);                \
  ++st.calls[name];                                       \
  if (!st.initialized) return CUDA_ERROR_NOT_INITIALIZED;

#define FAKE_ENTER_CONTEXT(name)                           \
  FAKE_ENTER(name)                                         \
  if (st.sticky != CUDA_SUCCESS) return st.sticky;         \
  if (st.retained == 0 || tl_context != st.context()) return CUDA_ERROR_INVALID_CONTEXT;

bool StreamOk(const FakeDriver::State& st, CUstream s) {
  return s == nullptr || st.streams.count(reinterpret_cast<uintptr_t>(s));
}

// Whether [p, p + n) lies inside one live allocation.
bool DeviceRangeOk(const FakeDriver::State& st, CUdeviceptr p, size_t n) {
  auto it = st.allocations.upper_bound(p);
  if (it == st.allocations.begin()) return false;
  --it;
  return p >= it->first && p - it->first + n <= it->second;
}

CUresult Init(unsigned flags) {
  FakeDriver::State& st = *g_state;
  std::lock_guard<std::mutex> lock(st.mu);
  ++st.calls["cuInit"];
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (st.options.init_result != CUDA_SUCCESS) return st.options.init_result;
  st.initialized = true;
  return CUDA_SUCCESS;
}
CUresult DriverGetVersion(int* v) {
  *v = g_state->options.driver_version;
  return CUDA_SUCCESS;
}
CUresult GetErrorName(CUresult r, const char** out) {
  switch (r) {
    case CUDA_SUCCESS: *out = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *out = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *out = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *out = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case CUDA_ERROR_NO_DEVICE: *out = "CUDA_ERROR_NO_DEVICE"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *out = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case CUDA_ERROR_INVALID_HANDLE: *out = "CUDA_ERROR_INVALID_HANDLE"; break;
    case CUDA_ERROR_NOT_FOUND: *out = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_INVALID_IMAGE: *out = "CUDA_ERROR_INVALID_IMAGE"; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *out = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case CUDA_ERROR_LAUNCH_FAILED: *out = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
      *out = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
      break;
    case CUDA_ERROR_NOT_PERMITTED: *out = "CUDA_ERROR_NOT_PERMITTED"; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
CUresult GetErrorString(CUresult r, const char** out) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS: *out = "an illegal memory access was encountered"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *out = "out of memory"; break;
    case CUDA_ERROR_NO_DEVICE: *out = "no CUDA-capable device is detected"; break;
    default: *out = "fake driver error"; break;
  }
  return CUDA_SUCCESS;
}
CUresult DeviceGetCount(int* n) {
  FAKE_ENTER("cuDeviceGetCount");
  *n = st.options.devices;
  return CUDA_SUCCESS;
}
CUresult DeviceGet(CUdevice* d, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= st.options.devices) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
CUresult DeviceGetName(char* name, int len, CUdevice) {
  FAKE_ENTER("cuDeviceGetName");
  std::strncpy(name, st.options.name.c_str(), static_cast<size_t>(len));
  return CUDA_SUCCESS;
}
CUresult DeviceTotalMem(size_t* bytes, CUdevice) {
  FAKE_ENTER("cuDeviceTotalMem");
  *bytes = st.options.device_bytes;
  return CUDA_SUCCESS;
}
CUresult DeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice) {
  FAKE_ENTER("cuDeviceGetAttribute");
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = st.options.sm_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = st.options.sm_minor; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 4; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = st.options.memory_pools; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxRetain(CUcontext* c, CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  if (st.process_sticky != CUDA_SUCCESS) return st.process_sticky;
  ++st.retained;
  *c = st.context();
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxRelease(CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease");
  if (st.retained == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --st.retained;
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxReset(CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxReset");
  ++st.resets;
  st.DropContext();
  return CUDA_SUCCESS;
}
CUresult CtxSetCurrent(CUcontext c) {
  FAKE_ENTER("cuCtxSetCurrent");
  if (c != nullptr && c != st.context()) return CUDA_ERROR_INVALID_CONTEXT;
  tl_context = c;
  return CUDA_SUCCESS;
}
CUresult CtxSynchronize() {
  FAKE_ENTER_CONTEXT("cuCtxSynchronize");
  return CUDA_SUCCESS;
}
CUresult StreamCreate(CUstream* s, unsigned) {
  FAKE_ENTER_CONTEXT("cuStreamCreate");
  uintptr_t h = st.NewHandle();
  st.streams.insert(h);
  *s = reinterpret_cast<CUstream>(h);
  return CUDA_SUCCESS;
}
CUresult StreamDestroy(CUstream s) {
  FAKE_ENTER_CONTEXT("cuStreamDestroy");
  return st.streams.erase(reinterpret_cast<uintptr_t>(s)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult StreamSynchronize(CUstream s) {
  FAKE_ENTER_CONTEXT("cuStreamSynchronize");
  return StreamOk(st, s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult StreamWaitEvent(CUstream s, CUevent e, unsigned) {
  FAKE_ENTER_CONTEXT("cuStreamWaitEvent");
  if (!StreamOk(st, s) || !st.events.count(reinterpret_cast<uintptr_t>(e))) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}
CUresult EventCreate(CUevent* e, unsigned flags) {
  FAKE_ENTER_CONTEXT("cuEventCreate");
  uintptr_t h = st.NewHandle();
  st.events.insert(h);
  st.event_flags[h] = flags;
  *e = reinterpret_cast<CUevent>(h);
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent e) {
  FAKE_ENTER_CONTEXT("cuEventDestroy");
  return st.events.erase(reinterpret_cast<uintptr_t>(e)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult EventRecord(CUevent e, CUstream s) {
  FAKE_ENTER_CONTEXT("cuEventRecord");
  if (!StreamOk(st, s) || !st.events.count(reinterpret_cast<uintptr_t>(e))) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  st.event_stamp[reinterpret_cast<uintptr_t>(e)] = st.launched.size();
  return CUDA_SUCCESS;
}
CUresult EventSynchronize(CUevent e) {
  FAKE_ENTER_CONTEXT("cuEventSynchronize");
  return st.events.count(reinterpret_cast<uintptr_t>(e)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult EventQuery(CUevent e) {
  FAKE_ENTER_CONTEXT("cuEventQuery");
  return st.events.count(reinterpret_cast<uintptr_t>(e)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
// Every launch between the two records "took" 0.5 ms.
CUresult EventElapsedTime(float* ms, CUevent start, CUevent end) {
  FAKE_ENTER_CONTEXT("cuEventElapsedTime");
  const auto a = reinterpret_cast<uintptr_t>(start), b = reinterpret_cast<uintptr_t>(end);
  if (!st.events.count(a) || !st.events.count(b)) return CUDA_ERROR_INVALID_HANDLE;
  if ((st.event_flags[a] | st.event_flags[b]) & CU_EVENT_DISABLE_TIMING) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (!st.event_stamp.count(a) || !st.event_stamp.count(b)) return CUDA_ERROR_NOT_READY;
  *ms = 0.5f * static_cast<float>(st.event_stamp[b] - st.event_stamp[a]);
  return CUDA_SUCCESS;
}
// The entry names of a real image: an ELF cubin's symbol names (its
// string tables' words) or a PTX text's `.entry NAME(`s.
std::vector<std::string> RealImageEntries(const void* image) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  std::vector<std::string> names;
  if (std::memcmp(bytes, "\x7f" "ELF", 4) == 0 && bytes[4] == 2) {  // ELF64: its size from the section table
    uint64_t shoff = 0;
    uint16_t shentsize = 0, shnum = 0;
    std::memcpy(&shoff, bytes + 0x28, 8);
    std::memcpy(&shentsize, bytes + 0x3A, 2);
    std::memcpy(&shnum, bytes + 0x3C, 2);
    std::string_view all(reinterpret_cast<const char*>(bytes), shoff + uint64_t{shentsize} * shnum);
    size_t start = 0;
    for (size_t i = 0; i <= all.size(); ++i) {
      if (i == all.size() || all[i] == '\0') {
        if (i > start) names.emplace_back(all.substr(start, i - start));
        start = i + 1;
      }
    }
    return names;
  }
  std::string_view text(reinterpret_cast<const char*>(bytes));
  if (text.find(".version") == std::string_view::npos) return names;  // not PTX either
  for (size_t at = text.find(".entry "); at != std::string_view::npos;
       at = text.find(".entry ", at + 1)) {
    size_t begin = at + 7;
    size_t end = text.find_first_of("( \n", begin);
    names.emplace_back(text.substr(begin, end - begin));
  }
  return names;
}

CUresult ModuleLoadData(CUmodule* m, const void* image) {
  FAKE_ENTER_CONTEXT("cuModuleLoadData");
  if (st.module_load_failures > 0) {
    --st.module_load_failures;
    return st.module_load_result;
  }
  std::string_view text(static_cast<const char*>(image));
  constexpr std::string_view kMagic = "fake-cubin:";
  std::vector<std::string> names;
  if (text.substr(0, kMagic.size()) != kMagic) {
    names = RealImageEntries(image);
    if (names.empty()) return CUDA_ERROR_INVALID_IMAGE;
    text = {};
  } else {
    text.remove_prefix(kMagic.size());
  }
  while (!text.empty()) {
    size_t comma = text.find(',');
    names.emplace_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  uintptr_t h = st.NewHandle();
  st.modules[h] = std::move(names);
  *m = reinterpret_cast<CUmodule>(h);
  return CUDA_SUCCESS;
}
CUresult ModuleUnload(CUmodule m) {
  FAKE_ENTER_CONTEXT("cuModuleUnload");
  uintptr_t h = reinterpret_cast<uintptr_t>(m);
  if (!st.modules.erase(h)) return CUDA_ERROR_INVALID_HANDLE;
  std::erase_if(st.functions, [&](const auto& f) { return f.second.first == h; });
  return CUDA_SUCCESS;
}
CUresult ModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  FAKE_ENTER_CONTEXT("cuModuleGetFunction");
  auto it = st.modules.find(reinterpret_cast<uintptr_t>(m));
  if (it == st.modules.end()) return CUDA_ERROR_INVALID_HANDLE;
  bool found = false;
  for (const std::string& n : it->second) found = found || n == name;
  if (!found) return CUDA_ERROR_NOT_FOUND;
  uintptr_t h = st.NewHandle();
  st.functions[h] = {it->first, name};
  *f = reinterpret_cast<CUfunction>(h);
  return CUDA_SUCCESS;
}
CUresult LaunchKernel(CUfunction f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned,
                      unsigned, unsigned, CUstream s, void** params, void**) {
  FakeDriver::Kernel kernel;
  {
    FAKE_ENTER_CONTEXT("cuLaunchKernel");
    auto it = st.functions.find(reinterpret_cast<uintptr_t>(f));
    if (it == st.functions.end() || !StreamOk(st, s)) return CUDA_ERROR_INVALID_HANDLE;
    st.launched.push_back(it->second.second);
    auto k = st.kernels.find(it->second.second);
    if (k != st.kernels.end()) kernel = k->second;
  }
  CUresult r = kernel ? kernel(params, gx, bx) : g_state->options.unset_kernel_result;
  if (r != CUDA_SUCCESS) {
    std::lock_guard<std::mutex> lock(g_state->mu);
    g_state->sticky = r;
  }
  return r;
}
CUresult MemPoolCreate(CUmemoryPool* p, const CUmemPoolProps* props) {
  FAKE_ENTER_CONTEXT("cuMemPoolCreate");
  if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
      props->location.id >= st.options.devices) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uintptr_t h = st.NewHandle();
  st.pools.insert(h);
  *p = reinterpret_cast<CUmemoryPool>(h);
  return CUDA_SUCCESS;
}
CUresult MemPoolDestroy(CUmemoryPool p) {
  FAKE_ENTER_CONTEXT("cuMemPoolDestroy");
  return st.pools.erase(reinterpret_cast<uintptr_t>(p)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult MemPoolSetAttribute(CUmemoryPool p, CUmemPool_attribute attr, void* value) {
  FAKE_ENTER_CONTEXT("cuMemPoolSetAttribute");
  if (!st.pools.count(reinterpret_cast<uintptr_t>(p))) return CUDA_ERROR_INVALID_HANDLE;
  if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
    st.release_threshold = *static_cast<cuuint64_t*>(value);
  }
  return CUDA_SUCCESS;
}
CUresult MemPoolGetAttribute(CUmemoryPool p, CUmemPool_attribute attr, void* value) {
  FAKE_ENTER_CONTEXT("cuMemPoolGetAttribute");
  if (!st.pools.count(reinterpret_cast<uintptr_t>(p))) return CUDA_ERROR_INVALID_HANDLE;
  if (attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT || attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) {
    *static_cast<cuuint64_t*>(value) = st.DeviceBytes();
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult MemAllocFromPoolAsync(CUdeviceptr* p, size_t bytes, CUmemoryPool pool, CUstream s) {
  FAKE_ENTER_CONTEXT("cuMemAllocFromPoolAsync");
  if (!st.pools.count(reinterpret_cast<uintptr_t>(pool)) || !StreamOk(st, s)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (st.DeviceBytes() + bytes > st.options.device_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  void* host = std::malloc(bytes + st.options.allocation_offset);
  if (!host) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(static_cast<char*>(host) + st.options.allocation_offset);
  st.allocations[*p] = bytes;
  return CUDA_SUCCESS;
}
CUresult MemFreeAsync(CUdeviceptr p, CUstream s) {
  FAKE_ENTER_CONTEXT("cuMemFreeAsync");
  if (!StreamOk(st, s)) return CUDA_ERROR_INVALID_HANDLE;
  auto it = st.allocations.find(p);
  if (it == st.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  st.FreeDevice(p);
  st.allocations.erase(it);
  return CUDA_SUCCESS;
}
CUresult MemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  FAKE_ENTER_CONTEXT("cuMemcpyHtoDAsync");
  if (!StreamOk(st, s)) return CUDA_ERROR_INVALID_HANDLE;
  if (!DeviceRangeOk(st, dst, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void*>(dst), src, n);
  return CUDA_SUCCESS;
}
CUresult MemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  FAKE_ENTER_CONTEXT("cuMemcpyDtoHAsync");
  if (!StreamOk(st, s)) return CUDA_ERROR_INVALID_HANDLE;
  if (!DeviceRangeOk(st, src, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}
CUresult MemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  FAKE_ENTER_CONTEXT("cuMemcpyDtoDAsync");
  if (!StreamOk(st, s)) return CUDA_ERROR_INVALID_HANDLE;
  if (!DeviceRangeOk(st, src, n) || !DeviceRangeOk(st, dst, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}
CUresult MemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  FAKE_ENTER_CONTEXT("cuMemsetD8Async");
  if (!StreamOk(st, s)) return CUDA_ERROR_INVALID_HANDLE;
  if (!DeviceRangeOk(st, dst, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void*>(dst), v, n);
  return CUDA_SUCCESS;
}
CUresult MemHostRegister(void* p, size_t n, unsigned flags) {
  FAKE_ENTER_CONTEXT("cuMemHostRegister");
  st.register_flags.push_back(flags);
  if (st.host_register_result != CUDA_SUCCESS) return st.host_register_result;
  if (st.registered.count(reinterpret_cast<uintptr_t>(p))) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  st.registered[reinterpret_cast<uintptr_t>(p)] = n;
  return CUDA_SUCCESS;
}
CUresult MemHostUnregister(void* p) {
  FAKE_ENTER_CONTEXT("cuMemHostUnregister");
  return st.registered.erase(reinterpret_cast<uintptr_t>(p)) ? CUDA_SUCCESS
                                                             : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
CUresult MemAllocHost(void** p, size_t n) {
  FAKE_ENTER_CONTEXT("cuMemAllocHost");
  *p = std::malloc(n);
  if (!*p) return CUDA_ERROR_OUT_OF_MEMORY;
  st.pinned[reinterpret_cast<uintptr_t>(*p)] = n;
  return CUDA_SUCCESS;
}
CUresult MemFreeHost(void* p) {
  FAKE_ENTER_CONTEXT("cuMemFreeHost");
  if (!st.pinned.erase(reinterpret_cast<uintptr_t>(p))) return CUDA_ERROR_INVALID_VALUE;
  std::free(p);
  return CUDA_SUCCESS;
}
CUresult MemGetInfo(size_t* free_bytes, size_t* total) {
  FAKE_ENTER_CONTEXT("cuMemGetInfo");
  *total = st.options.device_bytes;
  *free_bytes = st.options.device_bytes - st.DeviceBytes();
  return CUDA_SUCCESS;
}

#undef FAKE_ENTER_CONTEXT
#undef FAKE_ENTER

}  // namespace

FakeDriver::FakeDriver(FakeDriverOptions options) : state_(new State()) {
  state_->options = std::move(options);
  g_state = state_;
  tl_context = nullptr;
  CudaSymbols& s = symbols_;
  s.cuInit = Init;
  s.cuDriverGetVersion = DriverGetVersion;
  s.cuGetErrorName = GetErrorName;
  s.cuGetErrorString = GetErrorString;
  s.cuDeviceGetCount = DeviceGetCount;
  s.cuDeviceGet = DeviceGet;
  s.cuDeviceGetName = DeviceGetName;
  s.cuDeviceTotalMem = DeviceTotalMem;
  s.cuDeviceGetAttribute = DeviceGetAttribute;
  s.cuDevicePrimaryCtxRetain = PrimaryCtxRetain;
  s.cuDevicePrimaryCtxRelease = PrimaryCtxRelease;
  s.cuDevicePrimaryCtxReset = PrimaryCtxReset;
  s.cuCtxSetCurrent = CtxSetCurrent;
  s.cuCtxSynchronize = CtxSynchronize;
  s.cuStreamCreate = StreamCreate;
  s.cuStreamDestroy = StreamDestroy;
  s.cuStreamSynchronize = StreamSynchronize;
  s.cuStreamWaitEvent = StreamWaitEvent;
  s.cuEventCreate = EventCreate;
  s.cuEventDestroy = EventDestroy;
  s.cuEventRecord = EventRecord;
  s.cuEventSynchronize = EventSynchronize;
  s.cuEventQuery = EventQuery;
  s.cuEventElapsedTime = EventElapsedTime;
  s.cuModuleLoadData = ModuleLoadData;
  s.cuModuleUnload = ModuleUnload;
  s.cuModuleGetFunction = ModuleGetFunction;
  s.cuLaunchKernel = LaunchKernel;
  s.cuMemPoolCreate = MemPoolCreate;
  s.cuMemPoolDestroy = MemPoolDestroy;
  s.cuMemPoolSetAttribute = MemPoolSetAttribute;
  s.cuMemPoolGetAttribute = MemPoolGetAttribute;
  s.cuMemAllocFromPoolAsync = MemAllocFromPoolAsync;
  s.cuMemFreeAsync = MemFreeAsync;
  s.cuMemcpyHtoDAsync = MemcpyHtoDAsync;
  s.cuMemcpyDtoHAsync = MemcpyDtoHAsync;
  s.cuMemcpyDtoDAsync = MemcpyDtoDAsync;
  s.cuMemsetD8Async = MemsetD8Async;
  s.cuMemHostRegister = MemHostRegister;
  s.cuMemHostUnregister = MemHostUnregister;
  s.cuMemAllocHost = MemAllocHost;
  s.cuMemFreeHost = MemFreeHost;
  s.cuMemGetInfo = MemGetInfo;
}

FakeDriver::~FakeDriver() {
  for (const auto& [p, b] : state_->allocations) state_->FreeDevice(p);
  for (const auto& [p, b] : state_->pinned) std::free(reinterpret_cast<void*>(p));
  if (g_state == state_) g_state = nullptr;
  delete state_;
}

std::string FakeDriver::Cubin(const std::vector<std::string>& kernels) {
  std::string text = "fake-cubin:";
  for (size_t i = 0; i < kernels.size(); ++i) text += (i ? "," : "") + kernels[i];
  return text;
}

void FakeDriver::SetKernel(const std::string& name, Kernel kernel) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->kernels[name] = std::move(kernel);
}
void FakeDriver::InjectStickyError(CUresult error) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->sticky = error;
}
void FakeDriver::SetHostRegisterResult(CUresult result) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->host_register_result = result;
}
void FakeDriver::FailModuleLoads(CUresult result, int times) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->module_load_result = result;
  state_->module_load_failures = times;
}
int FakeDriver::calls(std::string_view name) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->calls.find(name);
  return it == state_->calls.end() ? 0 : it->second;
}
int FakeDriver::context_resets() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->resets;
}
bool FakeDriver::broken() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->sticky != CUDA_SUCCESS;
}
size_t FakeDriver::live_allocations() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->allocations.size();
}
uint64_t FakeDriver::device_bytes_in_use() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->DeviceBytes();
}
size_t FakeDriver::live_streams() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->streams.size();
}
size_t FakeDriver::live_events() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->events.size();
}
size_t FakeDriver::live_modules() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->modules.size();
}
uint64_t FakeDriver::registered_host_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  uint64_t n = 0;
  for (const auto& [p, b] : state_->registered) n += b;
  return n;
}
uint64_t FakeDriver::pinned_host_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  uint64_t n = 0;
  for (const auto& [p, b] : state_->pinned) n += b;
  return n;
}
std::vector<std::string> FakeDriver::launched() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->launched;
}
std::vector<unsigned> FakeDriver::host_register_flags() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->register_flags;
}

}  // namespace jitd::devices::cuda
