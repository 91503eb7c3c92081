// cuBLASLt and cuFFT calls against fake tables (fake_libraries.h): the
// descriptors a plan becomes (compute and scale types, transposes,
// layouts, batch counts and strides), pointers, workspace and stream; every
// descriptor destroyed on every path; cuFFT plans made once per step. And
// the loader's search: absences named, a file that will not load named.
#include "devices/cuda/cuda_libraries.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "devices/cuda/fake_libraries.h"

namespace jitd::devices::cuda {
namespace {

CudaLibrarySearch NowhereSearch() {
  CudaLibrarySearch search;
  search.use_loader_path = false;
  search.folders = {};
  search.python_roots = {"/nonexistent-jitd-python"};
  return search;
}

CublasLtMatmulPlan BatchedPlan(bool exact) {
  // lhs [2, 3, 4] x rhs [2, 5, 4] contracting {2} x {2}: rhs transposed.
  MatmulProblem p;
  p.lhs_dims = {2, 3, 4};
  p.rhs_dims = {2, 5, 4};
  p.lhs_batching = p.rhs_batching = {0};
  p.lhs_contracting = {2};
  p.rhs_contracting = {2};
  auto plan = PlanCublasLtMatmul(p, exact);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return *plan;
}

TEST(CudaLibrariesTest, MatmulDescriptorsFollowThePlan) {
  ResetFakeLibraryLog();
  const CublasLtSymbols& lt = FakeCublasLtSymbols();
  cublasLtHandle_t handle = nullptr;
  ASSERT_EQ(lt.cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  const CublasLtMatmulPlan plan = BatchedPlan(false);
  const auto stream = reinterpret_cast<CUstream>(0x5000);
  Status s = RunCublasLtMatmul(lt, handle, plan, /*lhs=*/0x1000, /*rhs=*/0x2000, /*result=*/0x3000,
                               /*workspace=*/0x4000, stream);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(FakeLibraries().matmuls.size(), 1u);
  const FakeMatmulCall& call = FakeLibraries().matmuls[0];
  EXPECT_EQ(call.compute, CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(call.scale, CUDA_R_32F);
  EXPECT_EQ(call.trans_a, CUBLAS_OP_T);  // rhs [n, k]
  EXPECT_EQ(call.trans_b, CUBLAS_OP_N);  // lhs [m, k]
  // A = rhs stored column-major 4 x 5 (ld 4), B = lhs 4 x 3 (ld 4), C 5 x 3.
  EXPECT_EQ(call.a.type, CUDA_R_32F);
  EXPECT_EQ(call.a.rows, 4u);
  EXPECT_EQ(call.a.cols, 5u);
  EXPECT_EQ(call.a.ld, 4);
  EXPECT_EQ(call.b.rows, 4u);
  EXPECT_EQ(call.b.cols, 3u);
  EXPECT_EQ(call.c.rows, 5u);
  EXPECT_EQ(call.c.cols, 3u);
  EXPECT_EQ(call.c.ld, 5);
  for (const FakeMatrixLayout* l : {&call.a, &call.b, &call.c, &call.d}) EXPECT_EQ(l->batch, 2);
  EXPECT_EQ(call.a.stride, 20);
  EXPECT_EQ(call.b.stride, 12);
  EXPECT_EQ(call.c.stride, 15);
  EXPECT_EQ(call.a_ptr, reinterpret_cast<const void*>(0x2000));  // A is the rhs
  EXPECT_EQ(call.b_ptr, reinterpret_cast<const void*>(0x1000));
  EXPECT_EQ(call.c_ptr, reinterpret_cast<const void*>(0x3000));
  EXPECT_EQ(call.d_ptr, reinterpret_cast<void*>(0x3000));
  EXPECT_EQ(call.alpha_f32, 1.0f);
  EXPECT_EQ(call.beta_f32, 0.0f);
  EXPECT_EQ(call.workspace, reinterpret_cast<void*>(0x4000));
  EXPECT_EQ(call.workspace_bytes, 4096u);  // what the heuristic's algorithm asks for
  EXPECT_EQ(call.stream, stream);
  ASSERT_EQ(lt.cublasLtDestroy(handle), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(FakeLibraries().live_objects, 0);  // every descriptor destroyed

  // --cuda-exact-f32: the same call in exact f32; f64 in 64F with a double alpha.
  ResetFakeLibraryLog();
  ASSERT_TRUE(RunCublasLtMatmul(lt, nullptr, BatchedPlan(true), 1, 2, 3, 4, nullptr).ok());
  EXPECT_EQ(FakeLibraries().matmuls.at(0).compute, CUBLAS_COMPUTE_32F);
  MatmulProblem f64;
  f64.lhs_type = f64.rhs_type = f64.result_type = ir::DType::kF64;
  f64.lhs_dims = {3, 4};
  f64.rhs_dims = {4, 5};
  f64.lhs_contracting = {1};
  f64.rhs_contracting = {0};
  ASSERT_TRUE(RunCublasLtMatmul(lt, nullptr, *PlanCublasLtMatmul(f64, false), 1, 2, 3, 4, nullptr).ok());
  const FakeMatmulCall& d = FakeLibraries().matmuls.at(1);
  EXPECT_EQ(d.compute, CUBLAS_COMPUTE_64F);
  EXPECT_EQ(d.scale, CUDA_R_64F);
  EXPECT_EQ(d.a.type, CUDA_R_64F);
  EXPECT_EQ(d.alpha_f64, 1.0);
  EXPECT_EQ(d.a.batch, 1);  // no batch attributes for one matrix
}

TEST(CudaLibrariesTest, MatmulFailuresAreNamedAndLeakNothing) {
  ResetFakeLibraryLog();
  const CublasLtSymbols& lt = FakeCublasLtSymbols();
  FakeLibraries().heuristic_results = 0;
  Status none = RunCublasLtMatmul(lt, nullptr, BatchedPlan(false), 1, 2, 3, 4, nullptr);
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
  EXPECT_NE(none.message().find("no algorithm"), std::string::npos) << none.message();
  EXPECT_EQ(FakeLibraries().live_objects, 0);
  ResetFakeLibraryLog();
  FakeLibraries().matmul_status = CUBLAS_STATUS_EXECUTION_FAILED;
  Status failed = RunCublasLtMatmul(lt, nullptr, BatchedPlan(false), 1, 2, 3, 4, nullptr);
  EXPECT_EQ(failed.code(), StatusCode::kInternal);
  EXPECT_NE(failed.message().find("CUBLAS_STATUS_EXECUTION_FAILED"), std::string::npos) << failed.message();
  EXPECT_EQ(FakeLibraries().live_objects, 0);
}

TEST(CudaLibrariesTest, FftPlansAreMadeOncePerStep) {
  ResetFakeLibraryLog();
  CufftPlan plan;
  plan.kind = FftKind::kC2R;
  plan.inverse = true;
  plan.n = {15, 16, 32};
  plan.batch = 14;
  plan.input_elements = 15 * 16 * 17;
  plan.output_elements = 15 * 16 * 32;
  plan.normalize = plan.copy_input = true;
  {
    CufftPlanCache cache(FakeCufftSymbols());
    const auto stream_a = reinterpret_cast<CUstream>(0xa0);
    const auto stream_b = reinterpret_cast<CUstream>(0xb0);
    ASSERT_TRUE(cache.Run(3, plan, 0x100, 0x200, stream_a, 0, /*work_area=*/0x900).ok());
    ASSERT_TRUE(cache.Run(3, plan, 0x300, 0x400, stream_b, 0, /*work_area=*/0x900).ok());
    EXPECT_EQ(cache.plans(), 1u);
    ASSERT_EQ(FakeLibraries().fft_plans.size(), 1u);
    const FakeFftPlanCall& made = FakeLibraries().fft_plans[0];
    EXPECT_EQ(made.n, (std::vector<long long>{15, 16, 32}));
    EXPECT_EQ(made.idist, 15 * 16 * 17);
    EXPECT_EQ(made.odist, 15 * 16 * 32);
    EXPECT_EQ(made.batch, 14);
    EXPECT_EQ(made.type, CUFFT_C2R);
    ASSERT_EQ(FakeLibraries().fft_execs.size(), 2u);
    EXPECT_EQ(FakeLibraries().fft_execs[1].kind, "C2R");
    EXPECT_EQ(FakeLibraries().fft_execs[1].input, reinterpret_cast<const void*>(0x300));
    EXPECT_EQ(FakeLibraries().fft_execs[1].output, reinterpret_cast<void*>(0x400));
    EXPECT_EQ(FakeLibraries().fft_execs[1].stream, stream_b);  // each run on its own stream
    // cuFFT allocates nothing itself: the work area is the caller's.
    EXPECT_FALSE(FakeLibraries().fft_execs[1].auto_allocation);
    EXPECT_EQ(FakeLibraries().fft_execs[1].work_area, reinterpret_cast<void*>(0x900));
    auto work = cache.WorkAreaBytes(3, plan);
    ASSERT_TRUE(work.ok());
    EXPECT_EQ(*work, 1024u);
    Status none = cache.Run(3, plan, 0x300, 0x400, stream_b);  // no work area
    EXPECT_EQ(none.code(), StatusCode::kFailedPrecondition) << none.ToString();
    EXPECT_NE(none.message().find("1024 bytes"), std::string::npos) << none.message();
    CufftPlan forward;
    forward.kind = FftKind::kZ2Z;
    forward.n = {8};
    forward.batch = 4;
    forward.input_elements = forward.output_elements = 8;
    ASSERT_TRUE(cache.Run(5, forward, 0x100, 0x200, stream_a, 0, 0x900).ok());
    EXPECT_EQ(FakeLibraries().fft_execs.back().kind, "Z2Z");
    EXPECT_EQ(FakeLibraries().fft_execs.back().direction, CUFFT_FORWARD);
    EXPECT_EQ(cache.plans(), 2u);
    // After a context reset (a new generation) the plan is made again.
    ASSERT_TRUE(cache.Run(5, forward, 0x100, 0x200, stream_a, /*generation=*/1, 0x900).ok());
    EXPECT_EQ(FakeLibraries().fft_plans.size(), 3u);
    EXPECT_EQ(cache.plans(), 2u);
    FakeLibraries().live_objects -= 1;  // the dropped plan is not destroyed (its context is gone)
  }
  EXPECT_EQ(FakeLibraries().live_objects, 0);  // the cache destroyed its plans

  ResetFakeLibraryLog();
  FakeLibraries().plan_status = CUFFT_INVALID_SIZE;
  CufftPlanCache cache(FakeCufftSymbols());
  Status failed = cache.Run(0, plan, 1, 2, nullptr);
  EXPECT_EQ(failed.code(), StatusCode::kInternal);
  EXPECT_NE(failed.message().find("cufftMakePlanMany64(cufft C2R"), std::string::npos) << failed.message();
  EXPECT_EQ(cache.plans(), 0u);
  EXPECT_EQ(FakeLibraries().live_objects, 0);
}

TEST(CudaLibrariesTest, ConvolutionDescriptorsFollowThePlanAndLeakNothing) {
  ResetFakeLibraryLog();
  CudnnConvPlan plan;
  plan.type = plan.compute = LibType::kF64;
  plan.math = ConvMath::kFma;
  plan.groups = 1;
  plan.x_dims = {1, 2, 5, 5};
  plan.x_strides = {50, 1, 10, 2};
  plan.w_dims = {3, 2, 3, 3};
  plan.y_dims = {1, 3, 3, 3};
  plan.y_strides = {27, 9, 3, 1};
  plan.pad = {0, 0};
  plan.stride = {1, 1};
  plan.dilation = {1, 1};
  plan.workspace_bytes = 4096;
  const CudnnSymbols& dnn = FakeCudnnSymbols();
  const auto stream = reinterpret_cast<CUstream>(0x77);
  Status s = RunCudnnConvolution(dnn, nullptr, plan, 0x10, 0x20, 0x30, 0x40, stream);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(FakeLibraries().convs.size(), 1u);
  const FakeConvCall& call = FakeLibraries().convs[0];
  EXPECT_EQ(call.x.type, CUDNN_DATA_DOUBLE);
  EXPECT_EQ(call.compute, CUDNN_DATA_DOUBLE);
  EXPECT_EQ(call.x.strides, (std::vector<int>{50, 1, 10, 2}));
  EXPECT_EQ(call.w_dims, (std::vector<int>{3, 2, 3, 3}));
  EXPECT_EQ(call.math, CUDNN_FMA_MATH);
  EXPECT_EQ(call.algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  EXPECT_EQ(call.workspace_bytes, 2048u);
  EXPECT_EQ(call.x_ptr, reinterpret_cast<const void*>(0x10));
  EXPECT_EQ(call.w_ptr, reinterpret_cast<const void*>(0x20));
  EXPECT_EQ(call.y_ptr, reinterpret_cast<void*>(0x30));
  EXPECT_EQ(call.stream, stream);
  EXPECT_EQ(FakeLibraries().live_objects, 0);
  // No algorithm within the workspace: NOT_FOUND, still nothing leaked.
  ResetFakeLibraryLog();
  FakeLibraries().conv_algo_workspace = 1 << 20;
  Status none = RunCudnnConvolution(dnn, nullptr, plan, 0x10, 0x20, 0x30, 0x40, stream);
  EXPECT_EQ(none.code(), StatusCode::kNotFound) << none.message();
  EXPECT_NE(none.message().find("no forward algorithm"), std::string::npos) << none.message();
  EXPECT_EQ(FakeLibraries().live_objects, 0);
}

TEST(CudaLibrariesTest, AbsentLibrariesAreNamed) {
  auto libs = CudaLibraries::Load(NowhereSearch());
  EXPECT_EQ(libs->cublaslt(), nullptr);
  EXPECT_EQ(libs->cufft(), nullptr);
  EXPECT_NE(libs->cublaslt_state().reason.find("libcublasLt.so.13"), std::string::npos)
      << libs->cublaslt_state().reason;
  EXPECT_NE(libs->cufft_state().reason.find("libcufft.so.12 / libcufft.so.11"), std::string::npos)
      << libs->cufft_state().reason;
  EXPECT_NE(libs->Describe().find("dots use jitd's own kernels"), std::string::npos) << libs->Describe();
  EXPECT_NE(libs->cudnn_state().reason.find("libcudnn.so.9"), std::string::npos) << libs->cudnn_state().reason;
}

TEST(CudaLibrariesTest, AFileThatWillNotLoadIsNamed) {
  const std::string dir = ::testing::TempDir() + "/jitd_libs_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  std::ofstream(dir + "/libcufft.so.12") << "not an ELF file";
  CudaLibrarySearch search = NowhereSearch();
  search.env_folders = {dir};
  auto libs = CudaLibraries::Load(search);
  EXPECT_EQ(libs->cufft(), nullptr);
  EXPECT_NE(libs->cufft_state().reason.find(dir + "/libcufft.so.12 would not load"), std::string::npos)
      << libs->cufft_state().reason;
  std::remove((dir + "/libcufft.so.12").c_str());
  ::rmdir(dir.c_str());
}

TEST(CudaLibrariesTest, PipWheelFoldersAreSearched) {
  const std::string real = "/usr/local/cuda/lib64/libcufft.so.12";
  struct stat st;
  if (::stat(real.c_str(), &st) != 0) GTEST_SKIP() << "no CUDA toolkit cuFFT at " << real;
  // site-packages/nvidia/cu13/lib/libcufft.so.12, as CUDA 13's wheels lay it out.
  const std::string root = ::testing::TempDir() + "/jitd_site_" + std::to_string(::getpid());
  const std::string lib = root + "/nvidia/cu13/lib";
  for (const std::string& d : {root, root + "/nvidia", root + "/nvidia/cu13", lib}) ::mkdir(d.c_str(), 0700);
  ASSERT_EQ(::symlink(real.c_str(), (lib + "/libcufft.so.12").c_str()), 0);
  CudaLibrarySearch search = NowhereSearch();
  search.python_roots = {root};
  auto libs = CudaLibraries::Load(search);
  EXPECT_NE(libs->cufft(), nullptr) << libs->cufft_state().reason;
  EXPECT_EQ(libs->cufft_state().path, lib + "/libcufft.so.12");
  std::remove((lib + "/libcufft.so.12").c_str());
  for (const std::string& d : {lib, root + "/nvidia/cu13", root + "/nvidia", root}) ::rmdir(d.c_str());
}

TEST(CudaLibrariesTest, TheToolkitsCufftLoads) {
  const std::string folder = "/usr/local/cuda/lib64";
  struct stat st;
  if (::stat((folder + "/libcufft.so.12").c_str(), &st) != 0) GTEST_SKIP() << "no CUDA toolkit cuFFT in " << folder;
  CudaLibrarySearch search = NowhereSearch();
  search.folders = {folder};
  auto libs = CudaLibraries::Load(search);
  ASSERT_NE(libs->cufft(), nullptr) << libs->cufft_state().reason;
  EXPECT_EQ(libs->cufft_state().path, folder + "/libcufft.so.12");
  EXPECT_GT(libs->cufft_state().version, 0);
}

}  // namespace
}  // namespace jitd::devices::cuda
