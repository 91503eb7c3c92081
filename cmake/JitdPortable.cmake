# JITD_PORTABLE=ON: the build behind scripts/bundle.sh, whose binaries run on
# any x86-64 Linux with glibc (and, optionally, a GPU driver) and nothing else
# installed. Included by the top-level CMakeLists.txt before any target.
#
#  - libstdc++ and libgcc linked statically into every binary;
#  - LLVM linked statically, only the components jitd uses
#    (jitd_portable_llvm_libraries below, used by jit/codegen's jitd_llvm);
#  - -Wl,--as-needed, so a library nothing references is not a dependency;
#  - -Wl,--gc-sections: the sections nothing references are dropped (the
#    static LLVM comes with a section per function; jitd 55 -> 46 MB);
#  - no build rpath pointing into this machine; instead every binary and
#    shared library carries DT_RPATH $ORIGIN/../lib (bundle: bin/, lib/ side
#    by side), which the loader also uses for the dependencies of shipped
#    libraries (OpenBLAS needs libgfortran, oneDNN libgomp): a DT_RUNPATH
#    would not be used for those.
# OpenBLAS and oneDNN stay shared libraries; scripts/bundle.sh copies them
# (and what they need beyond glibc, libz and libzstd) into the bundle's lib/.
# libcuda, cuBLAS(Lt), cuDNN and nvJitLink are never linked in any build.

if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  message(FATAL_ERROR "JITD_PORTABLE: the portable bundle is built for x86-64 only, not ${CMAKE_SYSTEM_PROCESSOR}")
endif()
if(JITD_SANITIZE)
  message(FATAL_ERROR "JITD_PORTABLE: a sanitized build (JITD_SANITIZE=${JITD_SANITIZE}) cannot be made portable")
endif()

set(CMAKE_SKIP_BUILD_RPATH ON)
set(CMAKE_SKIP_INSTALL_RPATH ON)
# The backslash survives Ninja and reaches the linker as a literal $ORIGIN.
foreach(_kind EXE SHARED MODULE)
  string(APPEND CMAKE_${_kind}_LINKER_FLAGS
         " -static-libstdc++ -static-libgcc -Wl,--as-needed -Wl,--gc-sections -Wl,--disable-new-dtags -Wl,-rpath,\\\$ORIGIN/../lib")
endforeach()

# lld links the static LLVM into each binary several times faster than
# ld.bfd; used when the compiler driver finds it, else the default linker.
include(CheckLinkerFlag)
check_linker_flag(CXX -fuse-ld=lld JITD_PORTABLE_HAVE_LLD)
if(JITD_PORTABLE_HAVE_LLD)
  add_link_options(-fuse-ld=lld)
endif()

# The LLVM components jitd uses: the ORC JIT and its linker, the new pass
# manager's pipelines, bitcode (the disk cache), the X86 backend for the cpu
# device and the NVPTX backend for the cuda device (plus the IR linker for
# libdevice).
set(JITD_PORTABLE_LLVM_COMPONENTS
    core support analysis transformutils scalaropts instcombine vectorize ipo passes
    target targetparser mc object bitreader bitwriter irreader linker
    orcjit orcshared orctargetprocess jitlink executionengine runtimedyld
    x86codegen x86asmparser x86desc x86info
    nvptxcodegen nvptxdesc nvptxinfo
    CACHE STRING "LLVM components linked statically into the portable build")

# jitd_portable_llvm_libraries(OUT): the static LLVM libraries for the
# components above (their own dependencies follow through the imported
# targets of LLVMExports.cmake). Needs find_package(LLVM) first.
function(jitd_portable_llvm_libraries out)
  llvm_map_components_to_libnames(_libs ${JITD_PORTABLE_LLVM_COMPONENTS})
  foreach(_lib IN LISTS _libs)
    if(NOT TARGET ${_lib})
      message(FATAL_ERROR "JITD_PORTABLE: LLVM has no static library ${_lib} (component list JITD_PORTABLE_LLVM_COMPONENTS); install llvm-19-dev")
    endif()
    get_target_property(_type ${_lib} TYPE)
    if(NOT _type STREQUAL "STATIC_LIBRARY")
      message(FATAL_ERROR "JITD_PORTABLE: ${_lib} is a ${_type}, not a static library")
    endif()
  endforeach()
  set(${out} ${_libs} PARENT_SCOPE)
endfunction()

# xxHash (jit/cache) from its static archive when Debian ships one.
find_library(XXHASH_LIB NAMES libxxhash.a xxhash)
