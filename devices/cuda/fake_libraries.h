// Fake cuBLASLt and cuFFT tables for tests without a GPU: every entry
// records its call (descriptor values, pointers, streams) in a
// FakeLibraryLog and answers success, or the failure a test plants.
// Descriptors are small heap objects that remember their attributes, so a
// test reads back what a matmul was described as; a leak check counts
// creates against destroys. Nothing is computed.
//
// Thread safety: one log at a time (the tables are plain functions over a
// process-wide log); tests use them from one thread.
#ifndef JITD_DEVICES_CUDA_FAKE_LIBRARIES_H_
#define JITD_DEVICES_CUDA_FAKE_LIBRARIES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "devices/cuda/cuda_libraries.h"

namespace jitd::devices::cuda {

struct FakeMatrixLayout {
  cudaDataType_t type{};
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};

struct FakeMatmulCall {
  cublasComputeType_t compute{};
  cudaDataType_t scale{};
  int32_t trans_a = 0, trans_b = 0;
  FakeMatrixLayout a, b, c, d;
  const void* a_ptr = nullptr;
  const void* b_ptr = nullptr;
  const void* c_ptr = nullptr;
  void* d_ptr = nullptr;
  float alpha_f32 = 0, beta_f32 = 0;
  double alpha_f64 = 0;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

struct FakeFftPlanCall {
  std::vector<long long> n;
  long long idist = 0, odist = 0, batch = 0;
  cufftType type{};
};

struct FakeFftExec {
  std::string kind;  // "C2R", ...
  int handle = 0;
  const void* input = nullptr;
  void* output = nullptr;
  int direction = 0;  // C2C / Z2Z only
  cudaStream_t stream = nullptr;
  void* work_area = nullptr;     // cufftSetWorkArea's, null when none was set
  bool auto_allocation = true;   // cufftSetAutoAllocation's
};

struct FakeTensorDesc {
  cudnnDataType_t type{};
  std::vector<int> dims, strides;
};

struct FakeConvCall {
  FakeTensorDesc x, y;
  cudnnDataType_t w_type{};
  cudnnTensorFormat_t w_format{};
  std::vector<int> w_dims;
  std::vector<int> pad, stride, dilation;
  cudnnConvolutionMode_t mode{};
  cudnnDataType_t compute{};
  int groups = 1;
  cudnnMathType_t math{};
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace_bytes = 0;
  const void* x_ptr = nullptr;
  const void* w_ptr = nullptr;
  void* y_ptr = nullptr;
  void* workspace = nullptr;
  cudaStream_t stream = nullptr;
};

struct FakeLibraryLog {
  std::vector<std::string> calls;  // every entry's name, in order
  std::vector<FakeMatmulCall> matmuls;
  std::vector<FakeFftPlanCall> fft_plans;
  std::vector<FakeFftExec> fft_execs;
  std::vector<FakeConvCall> convs;
  size_t conv_algo_workspace = 2048;  // what each ranked algorithm asks for
  int64_t live_objects = 0;  // descriptors, layouts, preferences, handles, plans
  // Planted failures.
  cublasStatus_t matmul_status = CUBLAS_STATUS_SUCCESS;
  int heuristic_results = 1;
  size_t heuristic_workspace = 4096;
  cufftResult plan_status = CUFFT_SUCCESS;
  // The work area every plan asks for (cufftMakePlanMany64 / cufftGetSize).
  // An exec of a plan with auto-allocation off and no work area set fails
  // (CUFFT_EXEC_FAILED), as it cannot run.
  size_t fft_work_bytes = 1024;
  // When set, a real-f32 / f64 matmul is computed on the host from its
  // descriptors (the pointers must then be host memory, as the fake
  // driver's device memory is): D = op(A) op(B), column-major, batched;
  // and an f32 / f64 convolution from its descriptors (NCHW filter,
  // strided tensors, pads, strides, dilations, groups).
  bool compute = false;
  // What cufftExec* and cudnnConvolutionForward answer (default success).
  cufftResult exec_status = CUFFT_SUCCESS;
  cudnnStatus_t conv_status = CUDNN_STATUS_SUCCESS;
  // Called by each entry that runs work (cublasLtMatmul, cufftExec*,
  // cudnnConvolutionForward) with its name, before it answers: a test
  // breaks the fake driver's context here, as a library kernel that faults
  // would (FakeDriver::InjectStickyError).
  std::function<void(const std::string&)> on_execute;
};

// The log the fake tables write (cleared by ResetFakeLibraryLog).
FakeLibraryLog& FakeLibraries();
void ResetFakeLibraryLog();

const CublasLtSymbols& FakeCublasLtSymbols();
const CufftSymbols& FakeCufftSymbols();
const CudnnSymbols& FakeCudnnSymbols();

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_FAKE_LIBRARIES_H_
