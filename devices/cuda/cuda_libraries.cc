#include "devices/cuda/cuda_libraries.h"

#include "devices/cuda/cuda_symbols.h"

#include <dlfcn.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace jitd::devices::cuda {

namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  return out;
}

std::vector<std::string> PythonRoots(const CudaLibrarySearch& search) {
  if (!search.python_roots.empty()) return search.python_roots;
  std::vector<std::string> roots;
  std::vector<std::string> patterns = {"/usr/lib/python3*/site-packages", "/usr/lib/python3/dist-packages",
                                       "/usr/local/lib/python3*/site-packages",
                                       "/usr/local/lib/python3*/dist-packages"};
  if (const char* home = std::getenv("HOME"); home && *home) {
    patterns.push_back(std::string(home) + "/.local/lib/python3*/site-packages");
  }
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv) {
    patterns.push_back(std::string(venv) + "/lib/python3*/site-packages");
  }
  for (const std::string& p : patterns) {
    for (std::string& r : Glob(p)) roots.push_back(std::move(r));
  }
  return roots;
}

// dlopens the first of `sonames` found; fills `state` either way.
void* OpenLibrary(const CudaLibrarySearch& search, const std::vector<std::string>& sonames, const std::string& wheel,
                  CudaLibraryState& state) {
  std::vector<std::string> folders = search.env_folders;
  const size_t loader_at = folders.size();
  folders.insert(folders.end(), search.folders.begin(), search.folders.end());
  // pip's NVIDIA wheels: nvidia/<library>/lib, and CUDA 13's shared
  // nvidia/cu13/lib (cu12 likewise).
  for (const std::string& root : PythonRoots(search)) {
    for (const std::string& sub : {wheel, std::string("cu13"), std::string("cu12")}) {
      folders.push_back(root + "/nvidia/" + sub + "/lib");
    }
  }
  std::string searched, refused;
  for (const std::string& soname : sonames) {
    for (size_t f = 0; f <= folders.size(); ++f) {
      std::string candidate;
      if (f == loader_at) {
        if (!search.use_loader_path) continue;
        candidate = soname;
      } else {
        const std::string& folder = folders[f < loader_at ? f : f - 1];
        candidate = folder + "/" + soname;
        if (!IsFile(candidate)) continue;
      }
      void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        char resolved[4096] = {};
        state.path = ::dlinfo(handle, RTLD_DI_ORIGIN, resolved) == 0 && candidate.find('/') == std::string::npos
                         ? std::string(resolved) + "/" + candidate
                         : candidate;
        return handle;
      }
      if (candidate.find('/') != std::string::npos) {
        const char* err = ::dlerror();
        refused += "; " + candidate + " would not load: " + (err ? err : "unknown error");
      }
    }
  }
  searched = "$JITD_CUDA_LIBS";
  if (search.use_loader_path) searched += ", the loader's path";
  for (const std::string& f : search.folders) searched += ", " + f;
  searched += ", pip nvidia/" + wheel + "/lib and nvidia/cu13/lib folders";
  std::string names;
  for (const std::string& s : sonames) names += (names.empty() ? "" : " / ") + s;
  state.reason = names + " not found (searched " + searched + ")" + refused;
  return nullptr;
}

template <typename Table>
bool Resolve(void* handle, const char* name, Table& field, CudaLibraryState& state) {
  void* sym = ::dlsym(handle, name);
  if (!sym) {
    if (state.reason.empty()) state.reason = state.path + " lacks " + name + " (too old?)";
    return false;
  }
  field = reinterpret_cast<Table>(sym);
  return true;
}

const char* CublasStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "cublasStatus";
  }
}

Status CublasFailed(const std::string& call, cublasStatus_t s) {
  return Internal("cuBLASLt: " + call + " failed: " + CublasStatusName(s) + " (" + std::to_string(static_cast<int>(s)) +
                  ")");
}

Status CufftFailed(const std::string& call, cufftResult r) {
  return Internal("cuFFT: " + call + " failed: cufftResult " + std::to_string(static_cast<int>(r)));
}

}  // namespace

std::string CublasStatusText(cublasStatus_t s) {
  return std::string(CublasStatusName(s)) + " (" + std::to_string(static_cast<int>(s)) + ")";
}

std::vector<std::string> CublasLtSonames() { return {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}; }
std::vector<std::string> CufftSonames() { return {"libcufft.so.12", "libcufft.so.11", "libcufft.so"}; }
std::vector<std::string> CudnnSonames() { return {"libcudnn.so.9", "libcudnn.so"}; }

CudaLibraries::~CudaLibraries() {
  for (void* h : handles_) ::dlclose(h);
}

std::unique_ptr<CudaLibraries> CudaLibraries::Load(const CudaLibrarySearch& search) {
  std::unique_ptr<CudaLibraries> libs(new CudaLibraries());
  if (void* h = OpenLibrary(search, CublasLtSonames(), "cublas", libs->cublaslt_state_)) {
    libs->handles_.push_back(h);
    bool ok = true;
#define JITD_RESOLVE(name) ok = Resolve(h, #name, libs->own_cublaslt_.name, libs->cublaslt_state_) && ok;
    JITD_CUBLASLT_SYMBOLS(JITD_RESOLVE)
#undef JITD_RESOLVE
    libs->cublaslt_state_.loaded = ok;
    if (ok) libs->cublaslt_state_.version = static_cast<int64_t>(libs->own_cublaslt_.cublasLtGetVersion());
  }
  if (void* h = OpenLibrary(search, CufftSonames(), "cufft", libs->cufft_state_)) {
    libs->handles_.push_back(h);
    bool ok = true;
#define JITD_RESOLVE(name) ok = Resolve(h, #name, libs->own_cufft_.name, libs->cufft_state_) && ok;
    JITD_CUFFT_SYMBOLS(JITD_RESOLVE)
#undef JITD_RESOLVE
    libs->cufft_state_.loaded = ok;
    int version = 0;
    if (ok && libs->own_cufft_.cufftGetVersion(&version) == CUFFT_SUCCESS) libs->cufft_state_.version = version;
  }
  if (void* h = OpenLibrary(search, CudnnSonames(), "cudnn", libs->cudnn_state_)) {
    libs->handles_.push_back(h);
    bool ok = true;
#define JITD_RESOLVE(name) ok = Resolve(h, #name, libs->own_cudnn_.name, libs->cudnn_state_) && ok;
    JITD_CUDNN_SYMBOLS(JITD_RESOLVE)
#undef JITD_RESOLVE
    libs->cudnn_state_.loaded = ok;
    if (ok) libs->cudnn_state_.version = static_cast<int64_t>(libs->own_cudnn_.cudnnGetVersion());
  }
  return libs;
}

std::unique_ptr<CudaLibraries> CudaLibraries::ForTables(const CublasLtSymbols* cublaslt, const CufftSymbols* cufft,
                                                        const CudnnSymbols* cudnn, const std::string& path) {
  std::unique_ptr<CudaLibraries> libs(new CudaLibraries());
  if (cudnn) {
    libs->cudnn_ = cudnn;
    libs->cudnn_state_.loaded = true;
    libs->cudnn_state_.path = path;
  } else {
    libs->cudnn_state_.reason = "no table given";
  }
  if (cublaslt) {
    libs->cublaslt_ = cublaslt;
    libs->cublaslt_state_.loaded = true;
    libs->cublaslt_state_.path = path;
  } else {
    libs->cublaslt_state_.reason = "no table given";
  }
  if (cufft) {
    libs->cufft_ = cufft;
    libs->cufft_state_.loaded = true;
    libs->cufft_state_.path = path;
  } else {
    libs->cufft_state_.reason = "no table given";
  }
  return libs;
}

std::string CudaLibraries::Describe() const {
  auto one = [](const CudaLibraryState& s, const char* fallback) {
    if (s.loaded) return s.name + " " + std::to_string(s.version) + " (" + s.path + ")";
    return s.name + " absent: " + s.reason + "; " + fallback;
  };
  return one(cublaslt_state_, "dots use jitd's own kernels") + "; " + one(cufft_state_, "ffts use jitd's own kernels") +
         "; " + one(cudnn_state_, "convolutions use jitd's own kernels");
}

const CudaLibraries& SharedCudaLibraries() {
  static const CudaLibraries* libs = [] {
    // Under jitd's fake driver (a libcuda.so.1 of its tests) real libraries
    // cannot work (they find no GPU through it): the fake's own library
    // tables, which compute f32 / f64 matmuls and convolutions on its
    // host-memory "device" pointers, serve instead.
    using FakeTables = int (*)(const void**, const void**, const void**);
    if (auto fake = reinterpret_cast<FakeTables>(FindInLoadedCudaDriver("jitd_fake_cuda_libraries"))) {
      const void* lt = nullptr;
      const void* fft = nullptr;
      const void* dnn = nullptr;
      if (fake(&lt, &fft, &dnn) == 1) {
        auto tables = CudaLibraries::ForTables(static_cast<const CublasLtSymbols*>(lt),
                                               static_cast<const CufftSymbols*>(fft),
                                               static_cast<const CudnnSymbols*>(dnn), "the fake driver's tables");
        return static_cast<const CudaLibraries*>(tables.release());
      }
    }
    CudaLibrarySearch search;
    if (const char* env = std::getenv("JITD_CUDA_LIBS"); env && *env) {
      std::stringstream in(env);
      for (std::string folder; std::getline(in, folder, ':');) {
        if (!folder.empty()) search.env_folders.push_back(folder);
      }
    }
    return static_cast<const CudaLibraries*>(CudaLibraries::Load(search).release());
  }();
  return *libs;
}

cudaDataType_t ToCudaDataType(LibType t) {
  switch (t) {
    case LibType::kF16: return CUDA_R_16F;
    case LibType::kBF16: return CUDA_R_16BF;
    case LibType::kF32: return CUDA_R_32F;
    case LibType::kF64: return CUDA_R_64F;
    case LibType::kC64: return CUDA_C_32F;
    case LibType::kC128: return CUDA_C_64F;
  }
  return CUDA_R_32F;
}

cublasComputeType_t ToCublasComputeType(LibCompute c) {
  switch (c) {
    case LibCompute::k32F: return CUBLAS_COMPUTE_32F;
    case LibCompute::k32FFastTF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case LibCompute::k64F: return CUBLAS_COMPUTE_64F;
  }
  return CUBLAS_COMPUTE_32F;
}

namespace {

// A matmul's descriptors, made from a plan, destroyed with this.
class MatmulDescriptors {
 public:
  explicit MatmulDescriptors(const CublasLtSymbols& lt) : lt_(lt) {}
  MatmulDescriptors(const MatmulDescriptors&) = delete;
  MatmulDescriptors& operator=(const MatmulDescriptors&) = delete;
  ~MatmulDescriptors() {
    for (cublasLtMatrixLayout_t l : {c, b, a}) {
      if (l) lt_.cublasLtMatrixLayoutDestroy(l);
    }
    if (desc) lt_.cublasLtMatmulDescDestroy(desc);
  }

  Status Make(const CublasLtMatmulPlan& plan) {
    const cudaDataType_t scale = ToCudaDataType(plan.scale_type);
    if (cublasStatus_t s = lt_.cublasLtMatmulDescCreate(&desc, ToCublasComputeType(plan.compute), scale);
        s != CUBLAS_STATUS_SUCCESS) {
      return CublasFailed("cublasLtMatmulDescCreate", s);
    }
    const int32_t trans_a = plan.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int32_t trans_b = plan.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (cublasStatus_t s = lt_.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                             sizeof trans_a);
        s != CUBLAS_STATUS_SUCCESS) {
      return CublasFailed("cublasLtMatmulDescSetAttribute(TRANSA)", s);
    }
    if (cublasStatus_t s = lt_.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                             sizeof trans_b);
        s != CUBLAS_STATUS_SUCCESS) {
      return CublasFailed("cublasLtMatmulDescSetAttribute(TRANSB)", s);
    }
    struct LayoutSpec {
      const char* name;
      cublasLtMatrixLayout_t* layout;
      LibType type;
      int64_t rows, cols, ld, stride;
    };
    const LayoutSpec specs[] = {{"A (rhs)", &a, plan.a_type, plan.a_rows, plan.a_cols, plan.lda, plan.stride_a},
                                {"B (lhs)", &b, plan.b_type, plan.b_rows, plan.b_cols, plan.ldb, plan.stride_b},
                                {"C (result)", &c, plan.c_type, plan.c_rows, plan.c_cols, plan.ldc, plan.stride_c}};
    for (const LayoutSpec& spec : specs) {
      if (cublasStatus_t s = lt_.cublasLtMatrixLayoutCreate(spec.layout, ToCudaDataType(spec.type),
                                                            static_cast<uint64_t>(spec.rows),
                                                            static_cast<uint64_t>(spec.cols), spec.ld);
          s != CUBLAS_STATUS_SUCCESS) {
        return CublasFailed(std::string("cublasLtMatrixLayoutCreate(") + spec.name + ")", s);
      }
      if (plan.batch > 1) {
        const auto count = static_cast<int32_t>(plan.batch);
        const int64_t stride = spec.stride;
        if (cublasStatus_t s = lt_.cublasLtMatrixLayoutSetAttribute(*spec.layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                                    &count, sizeof count);
            s != CUBLAS_STATUS_SUCCESS) {
          return CublasFailed(std::string("cublasLtMatrixLayoutSetAttribute(") + spec.name + ", BATCH_COUNT)", s);
        }
        if (cublasStatus_t s = lt_.cublasLtMatrixLayoutSetAttribute(
                *spec.layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
            s != CUBLAS_STATUS_SUCCESS) {
          return CublasFailed(
              std::string("cublasLtMatrixLayoutSetAttribute(") + spec.name + ", STRIDED_BATCH_OFFSET)", s);
        }
      }
    }
    return Status::Ok();
  }

  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;

 private:
  const CublasLtSymbols& lt_;
};

// The heuristic's first algorithm for descriptors already made.
StatusOr<CublasLtChoice> ChooseWith(const CublasLtSymbols& lt, cublasLtHandle_t handle,
                                    const CublasLtMatmulPlan& plan, const MatmulDescriptors& d) {
  cublasLtMatmulPreference_t pref = nullptr;
  if (cublasStatus_t s = lt.cublasLtMatmulPreferenceCreate(&pref); s != CUBLAS_STATUS_SUCCESS) {
    return CublasFailed("cublasLtMatmulPreferenceCreate", s);
  }
  struct DestroyPref {
    const CublasLtSymbols& lt;
    cublasLtMatmulPreference_t pref;
    ~DestroyPref() { lt.cublasLtMatmulPreferenceDestroy(pref); }
  } destroy{lt, pref};
  const auto workspace_bytes = static_cast<uint64_t>(plan.workspace_bytes);
  if (cublasStatus_t s = lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                 &workspace_bytes, sizeof workspace_bytes);
      s != CUBLAS_STATUS_SUCCESS) {
    return CublasFailed("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", s);
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (cublasStatus_t s = lt.cublasLtMatmulAlgoGetHeuristic(handle, d.desc, d.a, d.b, d.c, d.c, pref, 1, &heuristic,
                                                           &found);
      s != CUBLAS_STATUS_SUCCESS) {
    return CublasFailed("cublasLtMatmulAlgoGetHeuristic", s);
  }
  if (found < 1) {
    return NotFound("cuBLASLt: no algorithm for " + DescribeMatmulPlan(plan) + " within " +
                    std::to_string(workspace_bytes) + " workspace bytes");
  }
  CublasLtChoice choice;
  choice.algo = heuristic.algo;
  choice.workspace_bytes = std::min<uint64_t>(heuristic.workspaceSize, workspace_bytes);
  return choice;
}

}  // namespace

StatusOr<CublasLtChoice> ChooseCublasLtMatmul(const CublasLtSymbols& lt, cublasLtHandle_t handle,
                                              const CublasLtMatmulPlan& plan) {
  MatmulDescriptors d(lt);
  JITD_RETURN_IF_ERROR(d.Make(plan));
  return ChooseWith(lt, handle, plan, d);
}

Status RunCublasLtMatmul(const CublasLtSymbols& lt, cublasLtHandle_t handle, const CublasLtMatmulPlan& plan,
                         CUdeviceptr lhs, CUdeviceptr rhs, CUdeviceptr result, CUdeviceptr workspace,
                         CUstream stream, const CublasLtChoice* choice) {
  MatmulDescriptors d(lt);
  JITD_RETURN_IF_ERROR(d.Make(plan));
  CublasLtChoice chosen;
  if (choice) {
    chosen = *choice;
  } else {
    JITD_ASSIGN_OR_RETURN(chosen, ChooseWith(lt, handle, plan, d));
  }
  // alpha = 1, beta = 0 in the scale type (complex: real part 1).
  alignas(16) unsigned char alpha[16] = {}, beta[16] = {};
  if (plan.scale_type == LibType::kF64 || plan.scale_type == LibType::kC128) {
    const double one = 1.0;
    std::memcpy(alpha, &one, sizeof one);
  } else {
    const float one = 1.0f;
    std::memcpy(alpha, &one, sizeof one);
  }
  if (cublasStatus_t s = lt.cublasLtMatmul(handle, d.desc, alpha, reinterpret_cast<const void*>(rhs), d.a,
                                           reinterpret_cast<const void*>(lhs), d.b, beta,
                                           reinterpret_cast<const void*>(result), d.c,
                                           reinterpret_cast<void*>(result), d.c, &chosen.algo,
                                           reinterpret_cast<void*>(workspace), chosen.workspace_bytes, stream);
      s != CUBLAS_STATUS_SUCCESS) {
    return CublasFailed("cublasLtMatmul(" + DescribeMatmulPlan(plan) + ")", s);
  }
  return Status::Ok();
}

namespace {

cudnnDataType_t ToCudnnType(LibType t) {
  switch (t) {
    case LibType::kF16: return CUDNN_DATA_HALF;
    case LibType::kBF16: return CUDNN_DATA_BFLOAT16;
    case LibType::kF64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

std::vector<int> Ints(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }


// "cuDNN: CALL failed: MESSAGE (STATUS) for PLAN", or OK.
Status DnnCheck(const CudnnSymbols& dnn, const CudnnConvPlan& plan, cudnnStatus_t s, const std::string& call) {
  if (s == CUDNN_STATUS_SUCCESS) return Status::Ok();
  const char* text = dnn.cudnnGetErrorString ? dnn.cudnnGetErrorString(s) : nullptr;
  return Internal("cuDNN: " + call + " failed: " + (text ? text : "status") + " (" +
                  std::to_string(static_cast<int>(s)) + ") for " + DescribeConvPlan(plan));
}

// A convolution's descriptors, made from a plan, destroyed with this.
class ConvDescriptors {
 public:
  explicit ConvDescriptors(const CudnnSymbols& dnn) : dnn_(dnn) {}
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
  ~ConvDescriptors() {
    if (conv) dnn_.cudnnDestroyConvolutionDescriptor(conv);
    if (w) dnn_.cudnnDestroyFilterDescriptor(w);
    if (y) dnn_.cudnnDestroyTensorDescriptor(y);
    if (x) dnn_.cudnnDestroyTensorDescriptor(x);
  }

  Status Make(const CudnnConvPlan& plan) {
    auto check = [&](cudnnStatus_t s, const std::string& call) { return DnnCheck(dnn_, plan, s, call); };
    const cudnnDataType_t type = ToCudnnType(plan.type);
    const int nb = static_cast<int>(plan.x_dims.size());
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor"));
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnSetTensorNdDescriptor(x, type, nb, Ints(plan.x_dims).data(),
                                                               Ints(plan.x_strides).data()),
                               "cudnnSetTensorNdDescriptor(x)"));
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor"));
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnSetTensorNdDescriptor(y, type, nb, Ints(plan.y_dims).data(),
                                                               Ints(plan.y_strides).data()),
                               "cudnnSetTensorNdDescriptor(y)"));
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor"));
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnSetFilterNdDescriptor(w, type, plan.w_nhwc ? CUDNN_TENSOR_NHWC
                                                                                         : CUDNN_TENSOR_NCHW,
                                                              nb, Ints(plan.w_dims).data()),
                               "cudnnSetFilterNdDescriptor"));
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor"));
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnSetConvolutionNdDescriptor(conv, nb - 2, Ints(plan.pad).data(),
                                                                   Ints(plan.stride).data(), Ints(plan.dilation).data(),
                                                                   CUDNN_CROSS_CORRELATION, ToCudnnType(plan.compute)),
                               "cudnnSetConvolutionNdDescriptor"));
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnSetConvolutionGroupCount(conv, static_cast<int>(plan.groups)),
                               "cudnnSetConvolutionGroupCount"));
    const cudnnMathType_t math = plan.math == ConvMath::kFma        ? CUDNN_FMA_MATH
                                 : plan.math == ConvMath::kTensorOp ? CUDNN_TENSOR_OP_MATH
                                                                    : CUDNN_DEFAULT_MATH;
    JITD_RETURN_IF_ERROR(check(dnn_.cudnnSetConvolutionMathType(conv, math), "cudnnSetConvolutionMathType"));
    return Status::Ok();
  }

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

 private:
  const CudnnSymbols& dnn_;
};

// The first algorithm cuDNN's heuristic ranks that succeeds within the
// plan's workspace (and is exact f32 when FMA math was asked for).
StatusOr<CudnnConvChoice> ChooseWith(const CudnnSymbols& dnn, cudnnHandle_t handle, const CudnnConvPlan& plan,
                                     const ConvDescriptors& d) {
  constexpr int kAsked = 8;
  cudnnConvolutionFwdAlgoPerf_t perf[kAsked] = {};
  int returned = 0;
  JITD_RETURN_IF_ERROR(DnnCheck(dnn, plan,
                                dnn.cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, kAsked,
                                                                           &returned, perf),
                                "cudnnGetConvolutionForwardAlgorithm_v7"));
  const auto limit = static_cast<size_t>(plan.workspace_bytes);
  for (int i = 0; i < returned; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    // FMA math asked: an algorithm the heuristic would run with tensor
    // ops is not exact f32.
    if (plan.math == ConvMath::kFma && perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) {
      continue;
    }
    size_t bytes = 0;
    if (dnn.cudnnGetConvolutionForwardWorkspaceSize(handle, d.x, d.w, d.conv, d.y, perf[i].algo, &bytes) !=
            CUDNN_STATUS_SUCCESS ||
        bytes > limit) {
      continue;
    }
    CudnnConvChoice choice;
    choice.algo = perf[i].algo;
    choice.workspace_bytes = bytes;
    return choice;
  }
  return NotFound("cuDNN: no forward algorithm for " + DescribeConvPlan(plan) + " within " + std::to_string(limit) +
                  " workspace bytes (" + std::to_string(returned) + " ranked)");
}

}  // namespace

StatusOr<CudnnConvChoice> ChooseCudnnConvolution(const CudnnSymbols& dnn, cudnnHandle_t handle,
                                                 const CudnnConvPlan& plan) {
  ConvDescriptors d(dnn);
  JITD_RETURN_IF_ERROR(d.Make(plan));
  return ChooseWith(dnn, handle, plan, d);
}

Status RunCudnnConvolution(const CudnnSymbols& dnn, cudnnHandle_t handle, const CudnnConvPlan& plan, CUdeviceptr x,
                           CUdeviceptr w, CUdeviceptr y, CUdeviceptr workspace, CUstream stream,
                           const CudnnConvChoice* choice) {
  JITD_RETURN_IF_ERROR(DnnCheck(dnn, plan, dnn.cudnnSetStream(handle, stream), "cudnnSetStream"));
  ConvDescriptors d(dnn);
  JITD_RETURN_IF_ERROR(d.Make(plan));
  CudnnConvChoice chosen;
  if (choice) {
    chosen = *choice;
  } else {
    JITD_ASSIGN_OR_RETURN(chosen, ChooseWith(dnn, handle, plan, d));
  }
  alignas(8) unsigned char alpha[8] = {}, beta[8] = {};
  if (plan.compute == LibType::kF64) {
    const double one = 1.0;
    std::memcpy(alpha, &one, sizeof one);
  } else {
    const float one = 1.0f;
    std::memcpy(alpha, &one, sizeof one);
  }
  return DnnCheck(dnn, plan,
                  dnn.cudnnConvolutionForward(handle, alpha, d.x, reinterpret_cast<const void*>(x), d.w,
                                              reinterpret_cast<const void*>(w), d.conv, chosen.algo,
                                              reinterpret_cast<void*>(workspace), chosen.workspace_bytes, beta, d.y,
                                              reinterpret_cast<void*>(y)),
                  "cudnnConvolutionForward(algorithm " + std::to_string(static_cast<int>(chosen.algo)) + ")");
}

CufftPlanCache::~CufftPlanCache() {
  for (auto& [key, made] : plans_) fft_.cufftDestroy(made.handle);
}

size_t CufftPlanCache::plans() const {
  std::lock_guard lock(mu_);
  return plans_.size();
}

StatusOr<CufftPlanCache::Made*> CufftPlanCache::FindOrMakeLocked(size_t key, const CufftPlan& plan,
                                                                 uint64_t generation) {
  auto it = plans_.find(key);
  if (it != plans_.end() && it->second.generation != generation) {
    plans_.erase(it);  // made in a context that was reset
    it = plans_.end();
  }
  if (it != plans_.end()) return &it->second;
  cufftHandle handle = 0;
  if (cufftResult r = fft_.cufftCreate(&handle); r != CUFFT_SUCCESS) return CufftFailed("cufftCreate", r);
  // The work area comes from jitd's pool (the client's quota), not cuFFT.
  if (cufftResult r = fft_.cufftSetAutoAllocation(handle, 0); r != CUFFT_SUCCESS) {
    fft_.cufftDestroy(handle);
    return CufftFailed("cufftSetAutoAllocation(0)", r);
  }
  std::vector<long long> n(plan.n.begin(), plan.n.end());
  cufftType type = CUFFT_C2C;
  switch (plan.kind) {
    case FftKind::kC2C: type = CUFFT_C2C; break;
    case FftKind::kZ2Z: type = CUFFT_Z2Z; break;
    case FftKind::kR2C: type = CUFFT_R2C; break;
    case FftKind::kD2Z: type = CUFFT_D2Z; break;
    case FftKind::kC2R: type = CUFFT_C2R; break;
    case FftKind::kZ2D: type = CUFFT_Z2D; break;
  }
  size_t work = 0;
  // Packed layouts: no embeds, unit strides, distances the element counts.
  if (cufftResult r = fft_.cufftMakePlanMany64(handle, static_cast<int>(n.size()), n.data(), nullptr, 1,
                                               plan.input_elements, nullptr, 1, plan.output_elements, type,
                                               plan.batch, &work);
      r != CUFFT_SUCCESS) {
    fft_.cufftDestroy(handle);
    return CufftFailed("cufftMakePlanMany64(" + DescribeFftPlan(plan) + ")", r);
  }
  if (cufftResult r = fft_.cufftGetSize(handle, &work); r != CUFFT_SUCCESS) {
    fft_.cufftDestroy(handle);
    return CufftFailed("cufftGetSize", r);
  }
  return &plans_.emplace(key, Made{handle, generation, static_cast<uint64_t>(work)}).first->second;
}

StatusOr<uint64_t> CufftPlanCache::WorkAreaBytes(size_t key, const CufftPlan& plan, uint64_t generation) {
  std::lock_guard lock(mu_);
  JITD_ASSIGN_OR_RETURN(Made * made, FindOrMakeLocked(key, plan, generation));
  return made->work_bytes;
}

Status CufftPlanCache::Run(size_t key, const CufftPlan& plan, CUdeviceptr input, CUdeviceptr output, CUstream stream,
                           uint64_t generation, CUdeviceptr work_area) {
  std::lock_guard lock(mu_);
  JITD_ASSIGN_OR_RETURN(Made * made, FindOrMakeLocked(key, plan, generation));
  if (made->work_bytes > 0) {
    if (work_area == 0) {
      return Status(StatusCode::kFailedPrecondition, "cuFFT: " + DescribeFftPlan(plan) + " needs a work area of " +
                                                         std::to_string(made->work_bytes) + " bytes and was given none");
    }
    if (cufftResult r = fft_.cufftSetWorkArea(made->handle, reinterpret_cast<void*>(work_area)); r != CUFFT_SUCCESS) {
      return CufftFailed("cufftSetWorkArea", r);
    }
  }
  const cufftHandle handle = made->handle;
  if (cufftResult r = fft_.cufftSetStream(handle, stream); r != CUFFT_SUCCESS) return CufftFailed("cufftSetStream", r);
  const int direction = plan.inverse ? CUFFT_INVERSE : CUFFT_FORWARD;
  void* in = reinterpret_cast<void*>(input);
  void* out = reinterpret_cast<void*>(output);
  cufftResult r = CUFFT_SUCCESS;
  switch (plan.kind) {
    case FftKind::kC2C:
      r = fft_.cufftExecC2C(handle, static_cast<cufftComplex*>(in), static_cast<cufftComplex*>(out), direction);
      break;
    case FftKind::kZ2Z:
      r = fft_.cufftExecZ2Z(handle, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleComplex*>(out),
                            direction);
      break;
    case FftKind::kR2C:
      r = fft_.cufftExecR2C(handle, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out));
      break;
    case FftKind::kD2Z:
      r = fft_.cufftExecD2Z(handle, static_cast<cufftDoubleReal*>(in), static_cast<cufftDoubleComplex*>(out));
      break;
    case FftKind::kC2R:
      r = fft_.cufftExecC2R(handle, static_cast<cufftComplex*>(in), static_cast<cufftReal*>(out));
      break;
    case FftKind::kZ2D:
      r = fft_.cufftExecZ2D(handle, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleReal*>(out));
      break;
  }
  if (r != CUFFT_SUCCESS) return CufftFailed(std::string("cufftExec") + FftKindName(plan.kind), r);
  return Status::Ok();
}

}  // namespace jitd::devices::cuda
