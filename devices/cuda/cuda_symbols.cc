#include "devices/cuda/cuda_symbols.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>

namespace jitd::devices::cuda {
namespace {

constexpr const char* kLibrary = "libcuda.so.1";

// The handle of the driver LoadCudaDriver last loaded (null once closed).
std::atomic<void*> g_loaded_driver{nullptr};

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string DriverVersionText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace

std::vector<std::string> CudaSymbolNames() {
  std::vector<std::string> names;
#define JITD_CUDA_SYMBOL_NAME(name) names.push_back(#name);
  JITD_CUDA_SYMBOLS(JITD_CUDA_SYMBOL_NAME)
#undef JITD_CUDA_SYMBOL_NAME
  return names;
}

CudaDriverLibrary::~CudaDriverLibrary() {
  if (handle_) {
    void* expected = handle_;
    g_loaded_driver.compare_exchange_strong(expected, nullptr);
    ::dlclose(handle_);
  }
}

StatusOr<std::unique_ptr<CudaDriverLibrary>> LoadCudaDriver(const CudaDriverSearch& search) {
  // The candidates, in order; `searched` lists them for the message.
  std::vector<std::string> candidates;
  if (!search.env_path.empty()) {
    candidates.push_back(IsFile(search.env_path) ? search.env_path
                                                 : search.env_path + "/" + kLibrary);
  }
  if (search.use_loader_path) candidates.push_back(kLibrary);
  for (const std::string& folder : search.folders) candidates.push_back(folder + "/" + kLibrary);

  std::string searched;
  std::string refused;  // files that exist but would not load, and why
  void* handle = nullptr;
  std::string path;
  for (const std::string& candidate : candidates) {
    searched += (searched.empty() ? "" : ", ") +
                (candidate == kLibrary ? std::string("the loader's path") : candidate);
    // Never the toolkit's link-time stub, which only says "no driver".
    if (candidate.find("/stubs/") != std::string::npos) {
      refused += "; " + candidate + " is the CUDA toolkit's stub, not a driver";
      continue;
    }
    if (candidate != kLibrary && !IsFile(candidate)) continue;
    handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      path = candidate;
      break;
    }
    if (candidate != kLibrary) refused += "; " + candidate + ": " + ::dlerror();
  }
  if (!handle) {
    return NotFound(std::string(kLibrary) + " not found (searched " + searched +
                    "; set JITD_CUDA_DRIVER to its file or folder)" + refused);
  }
  if (path == kLibrary) {
    Dl_info info;
    void* any = ::dlsym(handle, "cuInit");
    if (any && ::dladdr(any, &info) && info.dli_fname) path = info.dli_fname;
  }

  std::unique_ptr<CudaDriverLibrary> library(new CudaDriverLibrary());
  library->handle_ = handle;
  library->path_ = path;
  g_loaded_driver.store(handle);

  using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProcAddress>(::dlsym(handle, "cuGetProcAddress_v2"));
  if (!get_proc) {
    return Status(StatusCode::kFailedPrecondition,
                  "driver too old: " + path +
                      " has no cuGetProcAddress_v2 (jitd needs a CUDA 12.0 or newer driver)");
  }
  // The driver's version first, for the messages below.
  int driver_version = 0;
  {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc("cuDriverGetVersion", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) ==
            CUDA_SUCCESS &&
        fn) {
      (void)reinterpret_cast<CUresult (*)(int*)>(fn)(&driver_version);
    }
  }
  std::string missing;
  std::string too_old;
  auto resolve = [&](const char* name, void** slot) {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = get_proc(name, slot, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && *slot) return;
    *slot = nullptr;
    std::string& list = found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? too_old : missing;
    list += (list.empty() ? "" : ", ") + std::string(name);
  };
#define JITD_CUDA_RESOLVE(name) \
  resolve(#name, reinterpret_cast<void**>(&library->symbols_.name));
  JITD_CUDA_SYMBOLS(JITD_CUDA_RESOLVE)
#undef JITD_CUDA_RESOLVE
  if (!missing.empty() || !too_old.empty()) {
    std::string message = "driver too old: " + path + " (CUDA " +
                          DriverVersionText(driver_version) + " driver) lacks ";
    if (!missing.empty()) message += missing;
    if (!too_old.empty()) {
      message += std::string(missing.empty() ? "" : "; and ") + too_old + " at CUDA " +
                 DriverVersionText(CUDA_VERSION);
    }
    return Status(StatusCode::kFailedPrecondition, message);
  }
  return library;
}

void* FindInLoadedCudaDriver(const char* symbol) {
  void* handle = g_loaded_driver.load();
  return handle ? ::dlsym(handle, symbol) : nullptr;
}

StatusOr<std::unique_ptr<CudaDriverLibrary>> LoadCudaDriver() {
  CudaDriverSearch search;
  if (const char* env = std::getenv("JITD_CUDA_DRIVER"); env && *env) search.env_path = env;
  return LoadCudaDriver(search);
}

}  // namespace jitd::devices::cuda
