#include "devices/cuda/cuda_allocator.h"

#include "devices/cuda/cuda_runtime.h"
#include "devices/cuda/cuda_status.h"

namespace jitd::devices::cuda {

CudaAllocation::~CudaAllocation() {
  if (runtime_) runtime_->ReleaseAllocation(*this);
  if (account_) account_->Release(bytes_);
}

CudaAllocator::~CudaAllocator() { DestroyPool(); }

Status CudaAllocator::CreatePool() {
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = ordinal_;
  CUmemoryPool pool = nullptr;
  JITD_CUDA_RETURN_IF_ERROR(symbols_, symbols_.cuMemPoolCreate(&pool, &props),
                            "cuMemPoolCreate on GPU " + std::to_string(ordinal_));
  cuuint64_t threshold = options_.release_threshold;
  CUresult r = symbols_.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  if (r != CUDA_SUCCESS) {
    (void)symbols_.cuMemPoolDestroy(pool);
    return CudaStatus(symbols_, r, "cuMemPoolSetAttribute(RELEASE_THRESHOLD)");
  }
  pool_ = pool;
  return Status::Ok();
}

void CudaAllocator::DestroyPool() {
  if (pool_) (void)symbols_.cuMemPoolDestroy(pool_);
  pool_ = nullptr;
}

StatusOr<std::unique_ptr<CudaAllocation>> CudaAllocator::Allocate(
    CudaRuntime* runtime, std::shared_ptr<CudaMemoryAccount> account, uint64_t bytes,
    CUstream stream, uint64_t generation, CUresult* driver_result) {
  *driver_result = CUDA_SUCCESS;
  if (bytes == 0) return InvalidArgument("device memory: an allocation of 0 bytes");
  if (!pool_) return Status(StatusCode::kUnavailable, "device memory: the pool is not created");
  JITD_RETURN_IF_ERROR(account->Reserve(bytes));
  CUdeviceptr pointer = 0;
  CUresult r = symbols_.cuMemAllocFromPoolAsync(&pointer, bytes, pool_, stream);
  if (r != CUDA_SUCCESS) {
    *driver_result = r;
    account->Release(bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      CudaPoolUsage u = usage();
      return ResourceExhausted("device memory: GPU " + std::to_string(ordinal_) + " cannot give " +
                               std::to_string(bytes) + " more bytes (jitd's pool holds " +
                               std::to_string(u.used_bytes) + " in use, " +
                               std::to_string(u.reserved_bytes) + " reserved)");
    }
    return CudaStatus(symbols_, r, "cuMemAllocFromPoolAsync of " + std::to_string(bytes) + " bytes");
  }
  if (pointer % kCudaAllocationAlignment != 0) {
    (void)symbols_.cuMemFreeAsync(pointer, stream);
    account->Release(bytes);
    return Internal("device memory: cuMemAllocFromPoolAsync of " + std::to_string(bytes) + " bytes gave address " +
                    std::to_string(pointer) + ", not a multiple of " + std::to_string(kCudaAllocationAlignment) +
                    " bytes, which jitd's kernels assume");
  }
  std::unique_ptr<CudaAllocation> buffer(new CudaAllocation());
  buffer->runtime_ = runtime;
  buffer->account_ = std::move(account);
  buffer->pointer_ = pointer;
  buffer->bytes_ = bytes;
  buffer->generation_ = generation;
  buffer->free_stream_ = stream;
  return buffer;
}

Status CudaAllocator::Free(CUdeviceptr pointer, CUstream stream) {
  JITD_CUDA_RETURN_IF_ERROR(symbols_, symbols_.cuMemFreeAsync(pointer, stream), "cuMemFreeAsync");
  return Status::Ok();
}

CudaPoolUsage CudaAllocator::usage() const {
  CudaPoolUsage u;
  if (!pool_) return u;
  cuuint64_t value = 0;
  if (symbols_.cuMemPoolGetAttribute(pool_, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &value) ==
      CUDA_SUCCESS) {
    u.used_bytes = value;
  }
  value = 0;
  if (symbols_.cuMemPoolGetAttribute(pool_, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &value) ==
      CUDA_SUCCESS) {
    u.reserved_bytes = value;
  }
  return u;
}

}  // namespace jitd::devices::cuda
