// The CUDA libraries jitd calls (cuBLASLt for matmuls, cuFFT for ffts,
// cuDNN v9's legacy convolution API for convolutions),
// loaded at run time like libcuda (cuda_symbols.h): dlopen, never linked,
// so one binary runs where they are and where they are not. Each library
// is looked for in, in order: $JITD_CUDA_LIBS (folders, ':'-separated), the
// dynamic loader's own search, the CUDA toolkit's folders and the folders
// of pip-installed NVIDIA wheels (nvidia/cublas/lib, nvidia/cufft/lib,
// nvidia/cudnn/lib, or CUDA 13's nvidia/cu13/lib, in python's
// site-packages). An absence is reported by name
// ("libcublasLt.so.13 not found (searched ...)"), and the cuda device then
// compiles those ops to its own kernels (CudaLibraryAvailability).
//
// Calls go through tables of function pointers (CublasLtSymbols,
// CufftSymbols) so tests fill them with fakes that record the calls
// (fake_libraries.h). RunCublasLtMatmul / RunCufft turn a plan
// (cublaslt_plan.h, cufft_plan.h) into the library's descriptors and call
// it on a stream.
//
// Thread safety: a loaded table is immutable. A CufftPlanCache is
// thread-safe (a plan runs under its lock: cuFFT binds a plan to a stream).
#ifndef JITD_DEVICES_CUDA_CUDA_LIBRARIES_H_
#define JITD_DEVICES_CUDA_CUDA_LIBRARIES_H_

#include <cublasLt.h>
#include <cuda.h>
#include <cudnn.h>
#include <cufft.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "devices/cuda/cublaslt_plan.h"
#include "devices/cuda/cudnn_plan.h"
#include "devices/cuda/cufft_plan.h"

namespace jitd::devices::cuda {

#define JITD_CUBLASLT_SYMBOLS(X)                                                                 \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtMatmulDescCreate)        \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)  \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)                            \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                          \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

#define JITD_CUFFT_SYMBOLS(X)                                                                 \
  X(cufftCreate) X(cufftDestroy) X(cufftGetVersion) X(cufftMakePlanMany64) X(cufftSetStream) \
  X(cufftExecC2C) X(cufftExecZ2Z) X(cufftExecR2C) X(cufftExecD2Z) X(cufftExecC2R) X(cufftExecZ2D) \
  X(cufftSetAutoAllocation) X(cufftGetSize) X(cufftSetWorkArea)

#define JITD_CUDNN_SYMBOLS(X)                                                                   \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnGetVersion) X(cudnnSetStream) X(cudnnGetErrorString)     \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensorNdDescriptor) X(cudnnDestroyTensorDescriptor)   \
  X(cudnnCreateFilterDescriptor) X(cudnnSetFilterNdDescriptor) X(cudnnDestroyFilterDescriptor)   \
  X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolutionNdDescriptor)                         \
  X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)                                \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnGetConvolutionForwardAlgorithm_v7)                 \
  X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward)

struct CublasLtSymbols {
#define JITD_LIB_SYMBOL_FIELD(name) decltype(&::name) name = nullptr;
  JITD_CUBLASLT_SYMBOLS(JITD_LIB_SYMBOL_FIELD)
};
struct CufftSymbols {
  JITD_CUFFT_SYMBOLS(JITD_LIB_SYMBOL_FIELD)
};
struct CudnnSymbols {
  JITD_CUDNN_SYMBOLS(JITD_LIB_SYMBOL_FIELD)
#undef JITD_LIB_SYMBOL_FIELD
};

// Where LoadCudaLibrary looks.
struct CudaLibrarySearch {
  std::vector<std::string> env_folders;  // LoadCudaLibraries fills it from $JITD_CUDA_LIBS
  bool use_loader_path = true;
  std::vector<std::string> folders = {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                                      "/usr/lib/x86_64-linux-gnu", "/usr/local/lib"};
  // Python site-packages roots whose nvidia/<wheel>/lib folders are searched.
  std::vector<std::string> python_roots;  // filled from the usual globs when empty
};

// One library: what was loaded or why not.
struct CudaLibraryState {
  std::string name;    // "cuBLASLt"
  bool loaded = false;
  std::string path;    // the file loaded
  std::string reason;  // why not ("libcublasLt.so.13 not found (searched ...)")
  int64_t version = 0; // the library's own version number
};

class CudaLibraries {
 public:
  ~CudaLibraries();
  CudaLibraries(const CudaLibraries&) = delete;
  CudaLibraries& operator=(const CudaLibraries&) = delete;

  // Loads the libraries (each independently; a missing one is only
  // reported in its state).
  static std::unique_ptr<CudaLibraries> Load(const CudaLibrarySearch& search);
  // Over tables the caller owns (tests: fakes); null: absent. `path` is
  // what Describe names as where they came from.
  static std::unique_ptr<CudaLibraries> ForTables(const CublasLtSymbols* cublaslt, const CufftSymbols* cufft,
                                                  const CudnnSymbols* cudnn = nullptr,
                                                  const std::string& path = "(table)");

  const CublasLtSymbols* cublaslt() const { return cublaslt_state_.loaded ? cublaslt_ : nullptr; }
  const CufftSymbols* cufft() const { return cufft_state_.loaded ? cufft_ : nullptr; }
  const CudaLibraryState& cublaslt_state() const { return cublaslt_state_; }
  const CudaLibraryState& cufft_state() const { return cufft_state_; }
  const CudnnSymbols* cudnn() const { return cudnn_state_.loaded ? cudnn_ : nullptr; }
  const CudaLibraryState& cudnn_state() const { return cudnn_state_; }
  // "cuBLASLt 130000 (/usr/local/cuda/lib64/libcublasLt.so.13); cuFFT
  // absent: libcufft.so.12 not found (...), ffts use jitd's kernels".
  std::string Describe() const;

 private:
  CudaLibraries() = default;
  std::vector<void*> handles_;
  CublasLtSymbols own_cublaslt_;
  CufftSymbols own_cufft_;
  const CublasLtSymbols* cublaslt_ = &own_cublaslt_;
  const CufftSymbols* cufft_ = &own_cufft_;
  CudnnSymbols own_cudnn_;
  const CudnnSymbols* cudnn_ = &own_cudnn_;
  CudaLibraryState cudnn_state_ = Named("cuDNN");
  CudaLibraryState cublaslt_state_ = Named("cuBLASLt");
  CudaLibraryState cufft_state_ = Named("cuFFT");
  static CudaLibraryState Named(std::string name) {
    CudaLibraryState s;
    s.name = std::move(name);
    return s;
  }
};

// The process's libraries, loaded on first use with $JITD_CUDA_LIBS.
const CudaLibraries& SharedCudaLibraries();

// The sonames tried for each library, newest first.
std::vector<std::string> CublasLtSonames();
std::vector<std::string> CufftSonames();
std::vector<std::string> CudnnSonames();

// "CUBLAS_STATUS_NOT_INITIALIZED (1)" and the like, for messages.
std::string CublasStatusText(cublasStatus_t status);

// The cudaDataType_t / cublasComputeType_t of a plan's types.
cudaDataType_t ToCudaDataType(LibType t);
cublasComputeType_t ToCublasComputeType(LibCompute c);

// What a library call runs with: the algorithm the library's heuristic
// ranks first among those that fit the plan's workspace, and the workspace
// bytes it takes. A heuristic query costs far more on the host than a
// small call itself, so the cuda device asks once per program step and
// runs every later call with the same choice (the same GPU, the same plan:
// the same answer).
struct CublasLtChoice {
  cublasLtMatmulAlgo_t algo{};
  uint64_t workspace_bytes = 0;
};
struct CudnnConvChoice {
  cudnnConvolutionFwdAlgo_t algo{};
  uint64_t workspace_bytes = 0;
};

// cuBLASLt's heuristic for the plan within plan.workspace_bytes; nothing
// run. NOT_FOUND when it has no algorithm, INTERNAL naming the call that
// failed. Every descriptor is destroyed before it returns.
StatusOr<CublasLtChoice> ChooseCublasLtMatmul(const CublasLtSymbols& lt, cublasLtHandle_t handle,
                                              const CublasLtMatmulPlan& plan);

// One matmul on `stream`: D = B(lhs) x A(rhs) as the plan says (alpha 1,
// beta 0), with `choice` (null: ChooseCublasLtMatmul's, asked now), whose
// workspace bytes `workspace` holds (may be 0 when that is 0). Every
// descriptor is destroyed before it returns. INTERNAL naming the call and
// the cuBLASLt status on failure.
Status RunCublasLtMatmul(const CublasLtSymbols& lt, cublasLtHandle_t handle, const CublasLtMatmulPlan& plan,
                         CUdeviceptr lhs, CUdeviceptr rhs, CUdeviceptr result, CUdeviceptr workspace,
                         CUstream stream, const CublasLtChoice* choice = nullptr);

// The first algorithm cudnnGetConvolutionForwardAlgorithm_v7 ranks that
// succeeds within the plan's workspace (with FMA math asked: one that is
// not a tensor-op algorithm); NOT_FOUND when none fits.
StatusOr<CudnnConvChoice> ChooseCudnnConvolution(const CudnnSymbols& dnn, cudnnHandle_t handle,
                                                 const CudnnConvPlan& plan);

// One forward convolution on `stream` (cudnnSetStream on `handle` first:
// a handle serves one call at a time): descriptors from the plan, `choice`
// (null: ChooseCudnnConvolution's, asked now), y = conv(x, w) (alpha 1,
// beta 0). Every descriptor is destroyed before it returns; INTERNAL
// naming the call and cuDNN's message on failure.
Status RunCudnnConvolution(const CudnnSymbols& dnn, cudnnHandle_t handle, const CudnnConvPlan& plan, CUdeviceptr x,
                           CUdeviceptr w, CUdeviceptr y, CUdeviceptr workspace, CUstream stream,
                           const CudnnConvChoice* choice = nullptr);

// cuFFT plans by CudaLibraryCall, made on first use (cufftCreate,
// cufftSetAutoAllocation(0), cufftMakePlanMany64) and destroyed with the
// cache. cuFFT allocates no work area of its own: the caller gives one per
// run (jitd's pool, counted against the client's device-memory quota),
// of the bytes WorkAreaBytes reports (cufftGetSize).
class CufftPlanCache {
 public:
  explicit CufftPlanCache(const CufftSymbols& fft) : fft_(fft) {}
  ~CufftPlanCache();
  CufftPlanCache(const CufftPlanCache&) = delete;
  CufftPlanCache& operator=(const CufftPlanCache&) = delete;
  // The work area bytes `plan` (keyed by `key`) needs, the plan made first
  // if it is not (the context must be current).
  StatusOr<uint64_t> WorkAreaBytes(size_t key, const CufftPlan& plan, uint64_t generation = 0);
  // Runs `plan` (keyed by `key`, one per step) from `input` to `output` on
  // `stream`, with `work_area` (WorkAreaBytes bytes; may be 0 only when
  // that is 0: FAILED_PRECONDITION otherwise). The input must be a scratch
  // copy when plan.copy_input. `generation`: the context's
  // (CudaRuntime::generation); a plan made in an earlier context is
  // dropped (not destroyed: its context is gone) and made again.
  Status Run(size_t key, const CufftPlan& plan, CUdeviceptr input, CUdeviceptr output, CUstream stream,
             uint64_t generation = 0, CUdeviceptr work_area = 0);
  size_t plans() const;

 private:
  const CufftSymbols& fft_;
  mutable std::mutex mu_;
  struct Made {
    cufftHandle handle = 0;
    uint64_t generation = 0;
    uint64_t work_bytes = 0;
  };
  // The plan for `key`, made if needed. Holds mu_.
  StatusOr<Made*> FindOrMakeLocked(size_t key, const CufftPlan& plan, uint64_t generation);
  std::map<size_t, Made> plans_;
};

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDA_LIBRARIES_H_
