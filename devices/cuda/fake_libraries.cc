#include "devices/cuda/fake_libraries.h"

#include <cstring>
#include <map>
#include <mutex>

namespace jitd::devices::cuda {

namespace {

FakeLibraryLog& Log() {
  static FakeLibraryLog* log = new FakeLibraryLog();
  return *log;
}

struct FakeDesc {
  cublasComputeType_t compute{};
  cudaDataType_t scale{};
  int32_t trans_a = 0, trans_b = 0;
};
struct FakePref {
  uint64_t max_workspace = 0;
};

cublasStatus_t Create(cublasLtHandle_t* handle) {
  Log().calls.push_back("cublasLtCreate");
  ++Log().live_objects;
  *handle = reinterpret_cast<cublasLtHandle_t>(new int(7));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t Destroy(cublasLtHandle_t handle) {
  Log().calls.push_back("cublasLtDestroy");
  --Log().live_objects;
  delete reinterpret_cast<int*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}
size_t GetVersion() { return 130000; }
cublasStatus_t DescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  Log().calls.push_back("cublasLtMatmulDescCreate");
  ++Log().live_objects;
  auto* d = new FakeDesc();
  d->compute = compute;
  d->scale = scale;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t DescDestroy(cublasLtMatmulDesc_t desc) {
  Log().calls.push_back("cublasLtMatmulDescDestroy");
  --Log().live_objects;
  delete reinterpret_cast<FakeDesc*>(desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t DescSet(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t size) {
  Log().calls.push_back("cublasLtMatmulDescSetAttribute");
  auto* d = reinterpret_cast<FakeDesc*>(desc);
  if (size != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATMUL_DESC_TRANSA) std::memcpy(&d->trans_a, buf, size);
  else if (attr == CUBLASLT_MATMUL_DESC_TRANSB) std::memcpy(&d->trans_b, buf, size);
  else return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows, uint64_t cols,
                            int64_t ld) {
  Log().calls.push_back("cublasLtMatrixLayoutCreate");
  ++Log().live_objects;
  auto* l = new FakeMatrixLayout();
  l->type = type;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LayoutDestroy(cublasLtMatrixLayout_t layout) {
  Log().calls.push_back("cublasLtMatrixLayoutDestroy");
  --Log().live_objects;
  delete reinterpret_cast<FakeMatrixLayout*>(layout);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LayoutSet(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                         size_t size) {
  Log().calls.push_back("cublasLtMatrixLayoutSetAttribute");
  auto* l = reinterpret_cast<FakeMatrixLayout*>(layout);
  if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && size == sizeof(int32_t)) {
    std::memcpy(&l->batch, buf, size);
  } else if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && size == sizeof(int64_t)) {
    std::memcpy(&l->stride, buf, size);
  } else {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t PrefCreate(cublasLtMatmulPreference_t* pref) {
  Log().calls.push_back("cublasLtMatmulPreferenceCreate");
  ++Log().live_objects;
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new FakePref());
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t PrefDestroy(cublasLtMatmulPreference_t pref) {
  Log().calls.push_back("cublasLtMatmulPreferenceDestroy");
  --Log().live_objects;
  delete reinterpret_cast<FakePref*>(pref);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t PrefSet(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                       size_t size) {
  Log().calls.push_back("cublasLtMatmulPreferenceSetAttribute");
  if (attr != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES || size != sizeof(uint64_t)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&reinterpret_cast<FakePref*>(pref)->max_workspace, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t Heuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                         cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t pref, int requested,
                         cublasLtMatmulHeuristicResult_t* results, int* count) {
  Log().calls.push_back("cublasLtMatmulAlgoGetHeuristic");
  const int n = std::min(requested, Log().heuristic_results);
  for (int i = 0; i < n; ++i) {
    results[i] = {};
    results[i].workspaceSize =
        std::min<size_t>(Log().heuristic_workspace, reinterpret_cast<FakePref*>(pref)->max_workspace);
    results[i].state = CUBLAS_STATUS_SUCCESS;
  }
  *count = n;
  return CUBLAS_STATUS_SUCCESS;
}
// D = alpha op(A) op(B) column-major, as cuBLASLt defines it (beta 0).
template <typename T>
void Compute(const FakeMatmulCall& c, double alpha) {
  const uint64_t m = c.trans_a ? c.a.cols : c.a.rows;
  const uint64_t k = c.trans_a ? c.a.rows : c.a.cols;
  const uint64_t n = c.trans_b ? c.b.rows : c.b.cols;
  const auto* a = static_cast<const T*>(c.a_ptr);
  const auto* b = static_cast<const T*>(c.b_ptr);
  auto* d = static_cast<T*>(c.d_ptr);
  for (int32_t batch = 0; batch < c.d.batch; ++batch) {
    const T* ab = a + batch * c.a.stride;
    const T* bb = b + batch * c.b.stride;
    T* db = d + batch * c.d.stride;
    for (uint64_t i = 0; i < m; ++i) {
      for (uint64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (uint64_t l = 0; l < k; ++l) {
          const T x = c.trans_a ? ab[l + i * static_cast<uint64_t>(c.a.ld)] : ab[i + l * static_cast<uint64_t>(c.a.ld)];
          const T y = c.trans_b ? bb[j + l * static_cast<uint64_t>(c.b.ld)] : bb[l + j * static_cast<uint64_t>(c.b.ld)];
          sum += static_cast<double>(x) * static_cast<double>(y);
        }
        db[i + j * static_cast<uint64_t>(c.d.ld)] = static_cast<T>(alpha * sum);
      }
    }
  }
}

cublasStatus_t Matmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                      cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc, const void* beta,
                      const void* c, cublasLtMatrixLayout_t c_desc, void* d, cublasLtMatrixLayout_t d_desc,
                      const cublasLtMatmulAlgo_t*, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  Log().calls.push_back("cublasLtMatmul");
  const auto* desc_ = reinterpret_cast<const FakeDesc*>(desc);
  FakeMatmulCall call;
  call.compute = desc_->compute;
  call.scale = desc_->scale;
  call.trans_a = desc_->trans_a;
  call.trans_b = desc_->trans_b;
  call.a = *reinterpret_cast<const FakeMatrixLayout*>(a_desc);
  call.b = *reinterpret_cast<const FakeMatrixLayout*>(b_desc);
  call.c = *reinterpret_cast<const FakeMatrixLayout*>(c_desc);
  call.d = *reinterpret_cast<const FakeMatrixLayout*>(d_desc);
  call.a_ptr = a;
  call.b_ptr = b;
  call.c_ptr = c;
  call.d_ptr = d;
  if (desc_->scale == CUDA_R_64F || desc_->scale == CUDA_C_64F) {
    std::memcpy(&call.alpha_f64, alpha, sizeof(double));
  } else {
    std::memcpy(&call.alpha_f32, alpha, sizeof(float));
    std::memcpy(&call.beta_f32, beta, sizeof(float));
  }
  call.workspace = workspace;
  call.workspace_bytes = workspace_bytes;
  call.stream = stream;
  Log().matmuls.push_back(call);
  if (Log().on_execute) Log().on_execute("cublasLtMatmul");
  if (Log().compute && Log().matmul_status == CUBLAS_STATUS_SUCCESS) {
    if (call.a.type == CUDA_R_32F) {
      Compute<float>(call, call.alpha_f32);
    } else if (call.a.type == CUDA_R_64F) {
      Compute<double>(call, call.alpha_f64);
    } else {
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  }
  return Log().matmul_status;
}

cufftResult FftCreate(cufftHandle* handle) {
  Log().calls.push_back("cufftCreate");
  ++Log().live_objects;
  static int next = 1;
  *handle = next++;
  return CUFFT_SUCCESS;
}
cufftResult FftDestroy(cufftHandle) {
  Log().calls.push_back("cufftDestroy");
  --Log().live_objects;
  return CUFFT_SUCCESS;
}
cufftResult FftVersion(int* v) {
  *v = 12000;
  return CUFFT_SUCCESS;
}
cufftResult FftMakePlan(cufftHandle, int rank, long long* n, long long* inembed, long long istride, long long idist,
                        long long* onembed, long long ostride, long long odist, cufftType type, long long batch,
                        size_t* work) {
  Log().calls.push_back("cufftMakePlanMany64");
  if (inembed || onembed || istride != 1 || ostride != 1) return CUFFT_INVALID_VALUE;
  FakeFftPlanCall call;
  call.n.assign(n, n + rank);
  call.idist = idist;
  call.odist = odist;
  call.batch = batch;
  call.type = type;
  Log().fft_plans.push_back(call);
  *work = Log().fft_work_bytes;
  return Log().plan_status;
}
cufftResult FftSetStream(cufftHandle, cudaStream_t stream) {
  Log().calls.push_back("cufftSetStream");
  FakeFftExec next;
  next.stream = stream;
  Log().fft_execs.push_back(next);  // filled in by the exec that follows
  return CUFFT_SUCCESS;
}
// Per plan handle: auto-allocation and the work area set.
struct FftPlanState {
  bool auto_allocation = true;
  void* work_area = nullptr;
};
std::map<cufftHandle, FftPlanState>& FftPlans() {
  static std::map<cufftHandle, FftPlanState> plans;
  return plans;
}
cufftResult FftSetAutoAllocation(cufftHandle plan, int automatic) {
  Log().calls.push_back("cufftSetAutoAllocation");
  FftPlans()[plan].auto_allocation = automatic != 0;
  return CUFFT_SUCCESS;
}
cufftResult FftGetSize(cufftHandle, size_t* work) {
  Log().calls.push_back("cufftGetSize");
  *work = Log().fft_work_bytes;
  return CUFFT_SUCCESS;
}
cufftResult FftSetWorkArea(cufftHandle plan, void* area) {
  Log().calls.push_back("cufftSetWorkArea");
  FftPlans()[plan].work_area = area;
  return CUFFT_SUCCESS;
}
cufftResult Exec(const char* kind, cufftHandle plan, const void* in, void* out, int direction) {
  Log().calls.push_back(std::string("cufftExec") + kind);
  if (Log().fft_execs.empty()) return CUFFT_EXEC_FAILED;  // no stream set first
  FakeFftExec& e = Log().fft_execs.back();
  e.kind = kind;
  e.handle = plan;
  e.input = in;
  e.output = out;
  e.direction = direction;
  const FftPlanState state = FftPlans()[plan];
  e.work_area = state.work_area;
  e.auto_allocation = state.auto_allocation;
  if (!state.auto_allocation && !state.work_area && Log().fft_work_bytes > 0) return CUFFT_EXEC_FAILED;
  if (Log().on_execute) Log().on_execute(std::string("cufftExec") + kind);
  return Log().exec_status;
}
cufftResult ExecC2C(cufftHandle p, cufftComplex* i, cufftComplex* o, int d) { return Exec("C2C", p, i, o, d); }
cufftResult ExecZ2Z(cufftHandle p, cufftDoubleComplex* i, cufftDoubleComplex* o, int d) {
  return Exec("Z2Z", p, i, o, d);
}
cufftResult ExecR2C(cufftHandle p, cufftReal* i, cufftComplex* o) { return Exec("R2C", p, i, o, 0); }
cufftResult ExecD2Z(cufftHandle p, cufftDoubleReal* i, cufftDoubleComplex* o) { return Exec("D2Z", p, i, o, 0); }
cufftResult ExecC2R(cufftHandle p, cufftComplex* i, cufftReal* o) { return Exec("C2R", p, i, o, 0); }
cufftResult ExecZ2D(cufftHandle p, cufftDoubleComplex* i, cufftDoubleReal* o) { return Exec("Z2D", p, i, o, 0); }

// cuDNN: descriptors are heap objects remembering what they were set to.
struct FakeConvDesc {
  std::vector<int> pad, stride, dilation;
  cudnnConvolutionMode_t mode{};
  cudnnDataType_t compute{};
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
// A handle keeps the stream cudnnSetStream bound it to, as cuDNN's does.
struct FakeDnnHandle {
  cudaStream_t stream = nullptr;
};
// The cuDNN entries lock this: calls on different handles may come from
// several threads at once, as they do to the real library.
// Tests may call with a null handle: that one is this.
FakeDnnHandle* HandleOf(cudnnHandle_t h) {
  static FakeDnnHandle* null_handle = new FakeDnnHandle();
  return h ? reinterpret_cast<FakeDnnHandle*>(h) : null_handle;
}
std::mutex& DnnMu() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
struct FakeFilterDesc {
  cudnnDataType_t type{};
  cudnnTensorFormat_t format{};
  std::vector<int> dims;
};

cudnnStatus_t DnnCreate(cudnnHandle_t* h) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnCreate");
  ++Log().live_objects;
  *h = reinterpret_cast<cudnnHandle_t>(new FakeDnnHandle());
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t DnnDestroy(cudnnHandle_t h) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnDestroy");
  --Log().live_objects;
  delete reinterpret_cast<FakeDnnHandle*>(h);
  return CUDNN_STATUS_SUCCESS;
}
size_t DnnVersion() { return 91900; }
cudnnStatus_t DnnSetStream(cudnnHandle_t h, cudaStream_t s) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnSetStream");
  HandleOf(h)->stream = s;
  return CUDNN_STATUS_SUCCESS;
}
const char* DnnError(cudnnStatus_t) { return "fake cuDNN error"; }
cudnnStatus_t CreateTensor(cudnnTensorDescriptor_t* d) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnCreateTensorDescriptor");
  ++Log().live_objects;
  *d = reinterpret_cast<cudnnTensorDescriptor_t>(new FakeTensorDesc());
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t SetTensor(cudnnTensorDescriptor_t d, cudnnDataType_t type, int nb, const int dims[], const int strides[]) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnSetTensorNdDescriptor");
  auto* t = reinterpret_cast<FakeTensorDesc*>(d);
  t->type = type;
  t->dims.assign(dims, dims + nb);
  t->strides.assign(strides, strides + nb);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t DestroyTensor(cudnnTensorDescriptor_t d) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnDestroyTensorDescriptor");
  --Log().live_objects;
  delete reinterpret_cast<FakeTensorDesc*>(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CreateFilter(cudnnFilterDescriptor_t* d) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnCreateFilterDescriptor");
  ++Log().live_objects;
  *d = reinterpret_cast<cudnnFilterDescriptor_t>(new FakeFilterDesc());
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t SetFilter(cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format, int nb,
                        const int dims[]) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnSetFilterNdDescriptor");
  auto* f = reinterpret_cast<FakeFilterDesc*>(d);
  f->type = type;
  f->format = format;
  f->dims.assign(dims, dims + nb);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t DestroyFilter(cudnnFilterDescriptor_t d) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnDestroyFilterDescriptor");
  --Log().live_objects;
  delete reinterpret_cast<FakeFilterDesc*>(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CreateConv(cudnnConvolutionDescriptor_t* d) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnCreateConvolutionDescriptor");
  ++Log().live_objects;
  *d = reinterpret_cast<cudnnConvolutionDescriptor_t>(new FakeConvDesc());
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t SetConv(cudnnConvolutionDescriptor_t d, int n, const int pad[], const int stride[], const int dilation[],
                      cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnSetConvolutionNdDescriptor");
  auto* c = reinterpret_cast<FakeConvDesc*>(d);
  c->pad.assign(pad, pad + n);
  c->stride.assign(stride, stride + n);
  c->dilation.assign(dilation, dilation + n);
  c->mode = mode;
  c->compute = compute;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t SetGroups(cudnnConvolutionDescriptor_t d, int groups) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnSetConvolutionGroupCount");
  reinterpret_cast<FakeConvDesc*>(d)->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t SetMath(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnSetConvolutionMathType");
  reinterpret_cast<FakeConvDesc*>(d)->math = math;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t DestroyConv(cudnnConvolutionDescriptor_t d) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnDestroyConvolutionDescriptor");
  --Log().live_objects;
  delete reinterpret_cast<FakeConvDesc*>(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t GetAlgos(cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnFilterDescriptor_t,
                       const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t, const int requested,
                       int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnGetConvolutionForwardAlgorithm_v7");
  // Two ranked: the first failing (to be skipped), then IMPLICIT_GEMM.
  const int n = std::min(requested, 2);
  for (int i = 0; i < n; ++i) {
    perf[i] = {};
    perf[i].algo = i == 0 ? CUDNN_CONVOLUTION_FWD_ALGO_FFT : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    perf[i].status = i == 0 ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;
    perf[i].mathType = reinterpret_cast<const FakeConvDesc*>(conv)->math;
  }
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t GetWorkspace(cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnFilterDescriptor_t,
                           const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t,
                           size_t* bytes) {
  const std::lock_guard<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnGetConvolutionForwardWorkspaceSize");
  *bytes = Log().conv_algo_workspace;
  return CUDNN_STATUS_SUCCESS;
}

// y = cross-correlation of x and w (NCHW filter), in double.
template <typename T>
void ComputeConv(const FakeConvCall& c) {
  const auto* x = static_cast<const T*>(c.x_ptr);
  const auto* w = static_cast<const T*>(c.w_ptr);
  auto* y = static_cast<T*>(c.y_ptr);
  const size_t spatial = c.x.dims.size() - 2;
  const int k_per_group = c.w_dims[0] / c.groups;
  const int c_per_group = c.w_dims[1];
  std::vector<int> at(spatial), win(spatial);
  auto next = [](std::vector<int>& idx, const std::vector<int>& extent, size_t offset) {
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < extent[d + offset]) return true;
      idx[d] = 0;
    }
    return false;
  };
  for (int n = 0; n < c.y.dims[0]; ++n) {
    for (int k = 0; k < c.y.dims[1]; ++k) {
      std::fill(at.begin(), at.end(), 0);
      do {
        double sum = 0;
        const int g = k / k_per_group;
        for (int ch = 0; ch < c_per_group; ++ch) {
          std::fill(win.begin(), win.end(), 0);
          do {
            int64_t xo = int64_t{n} * c.x.strides[0] + int64_t{g * c_per_group + ch} * c.x.strides[1];
            bool inside = true;
            for (size_t d = 0; d < spatial; ++d) {
              const int pos = at[d] * c.stride[d] - c.pad[d] + win[d] * c.dilation[d];
              inside = inside && pos >= 0 && pos < c.x.dims[d + 2];
              xo += int64_t{pos} * c.x.strides[d + 2];
            }
            if (!inside) continue;
            int64_t wo = int64_t{k} * c_per_group + ch;
            for (size_t d = 0; d < spatial; ++d) wo = wo * c.w_dims[d + 2] + win[d];
            sum += static_cast<double>(x[xo]) * static_cast<double>(w[wo]);
          } while (next(win, c.w_dims, 2));
        }
        int64_t yo = int64_t{n} * c.y.strides[0] + int64_t{k} * c.y.strides[1];
        for (size_t d = 0; d < spatial; ++d) yo += int64_t{at[d]} * c.y.strides[d + 2];
        y[yo] = static_cast<T>(sum);
      } while (next(at, c.y.dims, 2));
    }
  }
}

cudnnStatus_t ConvForward(cudnnHandle_t h, const void* alpha, const cudnnTensorDescriptor_t x_desc, const void* x,
                          const cudnnFilterDescriptor_t w_desc, const void* w, const cudnnConvolutionDescriptor_t conv,
                          cudnnConvolutionFwdAlgo_t algo, void* workspace, size_t workspace_bytes, const void* beta,
                          const cudnnTensorDescriptor_t y_desc, void* y) {
  std::unique_lock<std::mutex> lock(DnnMu());
  Log().calls.push_back("cudnnConvolutionForward");
  FakeConvCall call;
  call.x = *reinterpret_cast<const FakeTensorDesc*>(x_desc);
  call.y = *reinterpret_cast<const FakeTensorDesc*>(y_desc);
  const auto* f = reinterpret_cast<const FakeFilterDesc*>(w_desc);
  call.w_type = f->type;
  call.w_format = f->format;
  call.w_dims = f->dims;
  const auto* c = reinterpret_cast<const FakeConvDesc*>(conv);
  call.pad = c->pad;
  call.stride = c->stride;
  call.dilation = c->dilation;
  call.mode = c->mode;
  call.compute = c->compute;
  call.groups = c->groups;
  call.math = c->math;
  call.algo = algo;
  call.workspace = workspace;
  call.workspace_bytes = workspace_bytes;
  call.x_ptr = x;
  call.w_ptr = w;
  call.y_ptr = y;
  call.stream = HandleOf(h)->stream;
  Log().convs.push_back(call);
  if (Log().on_execute) {
    // Unlocked: the hook may wait for another thread's call.
    const auto hook = Log().on_execute;
    lock.unlock();
    hook("cudnnConvolutionForward");
    lock.lock();
  }
  if (Log().conv_status != CUDNN_STATUS_SUCCESS) return Log().conv_status;
  if (Log().compute) {
    if (call.mode != CUDNN_CROSS_CORRELATION || call.w_format != CUDNN_TENSOR_NCHW) return CUDNN_STATUS_NOT_SUPPORTED;
    if (call.x.type == CUDNN_DATA_FLOAT) {
      ComputeConv<float>(call);
    } else if (call.x.type == CUDNN_DATA_DOUBLE) {
      ComputeConv<double>(call);
    } else {
      return CUDNN_STATUS_NOT_SUPPORTED;
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

FakeLibraryLog& FakeLibraries() { return Log(); }

void ResetFakeLibraryLog() { Log() = FakeLibraryLog(); }

const CublasLtSymbols& FakeCublasLtSymbols() {
  static const CublasLtSymbols table = [] {
    CublasLtSymbols t;
    t.cublasLtCreate = Create;
    t.cublasLtDestroy = Destroy;
    t.cublasLtGetVersion = GetVersion;
    t.cublasLtMatmulDescCreate = DescCreate;
    t.cublasLtMatmulDescDestroy = DescDestroy;
    t.cublasLtMatmulDescSetAttribute = DescSet;
    t.cublasLtMatrixLayoutCreate = LayoutCreate;
    t.cublasLtMatrixLayoutDestroy = LayoutDestroy;
    t.cublasLtMatrixLayoutSetAttribute = LayoutSet;
    t.cublasLtMatmulPreferenceCreate = PrefCreate;
    t.cublasLtMatmulPreferenceDestroy = PrefDestroy;
    t.cublasLtMatmulPreferenceSetAttribute = PrefSet;
    t.cublasLtMatmulAlgoGetHeuristic = Heuristic;
    t.cublasLtMatmul = Matmul;
    return t;
  }();
  return table;
}

const CudnnSymbols& FakeCudnnSymbols() {
  static const CudnnSymbols table = [] {
    CudnnSymbols t;
    t.cudnnCreate = DnnCreate;
    t.cudnnDestroy = DnnDestroy;
    t.cudnnGetVersion = DnnVersion;
    t.cudnnSetStream = DnnSetStream;
    t.cudnnGetErrorString = DnnError;
    t.cudnnCreateTensorDescriptor = CreateTensor;
    t.cudnnSetTensorNdDescriptor = SetTensor;
    t.cudnnDestroyTensorDescriptor = DestroyTensor;
    t.cudnnCreateFilterDescriptor = CreateFilter;
    t.cudnnSetFilterNdDescriptor = SetFilter;
    t.cudnnDestroyFilterDescriptor = DestroyFilter;
    t.cudnnCreateConvolutionDescriptor = CreateConv;
    t.cudnnSetConvolutionNdDescriptor = SetConv;
    t.cudnnSetConvolutionGroupCount = SetGroups;
    t.cudnnSetConvolutionMathType = SetMath;
    t.cudnnDestroyConvolutionDescriptor = DestroyConv;
    t.cudnnGetConvolutionForwardAlgorithm_v7 = GetAlgos;
    t.cudnnGetConvolutionForwardWorkspaceSize = GetWorkspace;
    t.cudnnConvolutionForward = ConvForward;
    return t;
  }();
  return table;
}

const CufftSymbols& FakeCufftSymbols() {
  static const CufftSymbols table = [] {
    CufftSymbols t;
    t.cufftCreate = FftCreate;
    t.cufftDestroy = FftDestroy;
    t.cufftGetVersion = FftVersion;
    t.cufftMakePlanMany64 = FftMakePlan;
    t.cufftSetStream = FftSetStream;
    t.cufftExecC2C = ExecC2C;
    t.cufftExecZ2Z = ExecZ2Z;
    t.cufftExecR2C = ExecR2C;
    t.cufftExecD2Z = ExecD2Z;
    t.cufftExecC2R = ExecC2R;
    t.cufftExecZ2D = ExecZ2D;
    t.cufftSetAutoAllocation = FftSetAutoAllocation;
    t.cufftGetSize = FftGetSize;
    t.cufftSetWorkArea = FftSetWorkArea;
    return t;
  }();
  return table;
}

}  // namespace jitd::devices::cuda
