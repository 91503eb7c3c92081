# devices/cuda's compiler half (included from devices/cuda/CMakeLists.txt):
# module -> CudaProgram (NVPTX kernels through jit/codegen, PTX -> cubin
# through nvJitLink or ptxas). Needs no cuda.h, driver or GPU: it builds
# and its tests run wherever LLVM has the NVPTX target; the assembler
# (nvJitLink / ptxas) is looked for at run time.
add_library(jitd_cuda_compiler STATIC
  ${CMAKE_CURRENT_LIST_DIR}/cuda_compiler.cc
  ${CMAKE_CURRENT_LIST_DIR}/cuda_program.cc
  ${CMAKE_CURRENT_LIST_DIR}/cublaslt_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/cufft_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/cufft_normalize_kernel.cc
  ${CMAKE_CURRENT_LIST_DIR}/cholesky_kernel.cc
  ${CMAKE_CURRENT_LIST_DIR}/cudnn_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/cudnn_filter_kernel.cc
  ${CMAKE_CURRENT_LIST_DIR}/im2col_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/im2col_kernel.cc
  ${CMAKE_CURRENT_LIST_DIR}/ptx_compiler.cc)
target_link_libraries(jitd_cuda_compiler PUBLIC jitd_codegen jitd_passes jitd_eval jitd_ir jitd_base ${CMAKE_DL_LIBS})
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/cuda_compiler.cc ${CMAKE_CURRENT_LIST_DIR}/cufft_normalize_kernel.cc
  ${CMAKE_CURRENT_LIST_DIR}/cholesky_kernel.cc ${CMAKE_CURRENT_LIST_DIR}/cudnn_filter_kernel.cc
  ${CMAKE_CURRENT_LIST_DIR}/im2col_kernel.cc
  PROPERTIES COMPILE_OPTIONS -fno-rtti)

jitd_add_test(jitd_cuda_compiler_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda_compiler_test.cc
  DEPS jitd_cuda_compiler jitd_frontend)

# Library plans (cuBLASLt matmuls, cuFFT transforms) built offline.
jitd_add_test(jitd_cuda_library_plan_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cublaslt_plan_test.cc ${CMAKE_CURRENT_LIST_DIR}/cufft_plan_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/cudnn_plan_test.cc
  DEPS jitd_cuda_compiler jitd_frontend)
jitd_add_test(jitd_cuda_compiler_library_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda_compiler_library_test.cc
  DEPS jitd_cuda_compiler jitd_frontend)
