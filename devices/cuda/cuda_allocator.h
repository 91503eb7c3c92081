// Device memory for the cuda device: one CUDA memory pool per GPU, async
// allocation and free on the client's stream, and jitd's own per-client
// accounting that enforces `jitd serve --max-device-bytes`.
//
// The pool is created empty (nothing is reserved up front); freed memory
// stays cached in it up to a release threshold and is handed back to the
// driver beyond that. The accounting is ours, not the driver's: a client's
// bytes are the sizes it asked for, counted when an allocation succeeds and
// released when its CudaAllocation goes.
//
// Thread safety: CudaAllocator and CudaMemoryAccount are thread-safe.
// Lifetime: accounts and buffers must not outlive the CudaRuntime whose
// allocator made them; a buffer holds its account alive.
#ifndef JITD_DEVICES_CUDA_CUDA_ALLOCATOR_H_
#define JITD_DEVICES_CUDA_CUDA_ALLOCATOR_H_

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "devices/cuda/cuda_symbols.h"
#include "devices/memory_account.h"

namespace jitd::devices::cuda {

class CudaRuntime;

// One client's device memory: what it holds and its limit (0 = none).
using CudaMemoryAccount = devices::MemoryAccount;

// A block of device memory from the pool, owned by one client. Freed
// (asynchronously, on the stream it was last used on) when destroyed. A
// buffer made before a context reset is lost with that context: its
// pointer is stale (CudaRuntime::CheckAllocation says so) and destroying it
// frees nothing on the device but still releases its account's bytes.
class CudaAllocation {
 public:
  ~CudaAllocation();
  CudaAllocation(const CudaAllocation&) = delete;
  CudaAllocation& operator=(const CudaAllocation&) = delete;

  CUdeviceptr pointer() const { return pointer_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t generation() const { return generation_; }  // the context's (CudaRuntime)

 private:
  friend class CudaAllocator;
  friend class CudaRuntime;
  CudaAllocation() = default;
  CudaRuntime* runtime_ = nullptr;
  std::shared_ptr<CudaMemoryAccount> account_;
  CUdeviceptr pointer_ = 0;
  uint64_t bytes_ = 0;
  uint64_t generation_ = 0;
  CUstream free_stream_ = nullptr;
};

// Every allocation starts at a multiple of this many bytes, checked as it
// is made: the kernels declare their pointer parameters 16-byte aligned
// (codegen::GridLimits::buffer_alignment), arena offsets are multiples of
// 256, and the pool itself gives cudaMalloc's 256-byte alignment.
inline constexpr uint64_t kCudaAllocationAlignment = 16;

struct CudaAllocatorOptions {
  // Bytes the pool keeps cached after frees before returning memory to the
  // driver (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD).
  uint64_t release_threshold = uint64_t{256} << 20;
};

// Pool usage, from the driver (0 when it cannot say).
struct CudaPoolUsage {
  uint64_t used_bytes = 0;      // in live allocations
  uint64_t reserved_bytes = 0;  // taken from the GPU, used or cached
};

// The pool of one GPU. Created and re-created (after a context reset) by
// CudaRuntime, which serializes those against allocation.
class CudaAllocator {
 public:
  CudaAllocator(const CudaSymbols& symbols, int ordinal, CudaAllocatorOptions options)
      : symbols_(symbols), ordinal_(ordinal), options_(options) {}
  ~CudaAllocator();

  // Creates the pool in the current context (after a reset the old one is
  // gone with its context and is forgotten, not destroyed).
  Status CreatePool();
  void ForgetPool() { pool_ = nullptr; }
  void DestroyPool();

  // `bytes` (> 0) for `account` on `stream`: counted first, then allocated
  // from the pool; RESOURCE_EXHAUSTED naming --max-device-bytes past the
  // account's limit, or naming the GPU when the pool cannot grow; INTERNAL
  // for a pointer not aligned to kCudaAllocationAlignment (freed again). A
  // failed driver call leaves its result in *driver_result (else
  // CUDA_SUCCESS).
  StatusOr<std::unique_ptr<CudaAllocation>> Allocate(CudaRuntime* runtime,
                                                 std::shared_ptr<CudaMemoryAccount> account,
                                                 uint64_t bytes, CUstream stream,
                                                 uint64_t generation, CUresult* driver_result);
  // Frees `pointer` on `stream` (called by ~CudaAllocation through the runtime).
  Status Free(CUdeviceptr pointer, CUstream stream);

  CudaPoolUsage usage() const;

 private:
  const CudaSymbols& symbols_;
  int ordinal_;
  CudaAllocatorOptions options_;
  CUmemoryPool pool_ = nullptr;
};

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDA_ALLOCATOR_H_
