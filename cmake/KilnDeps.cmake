# Finds kiln's dependencies. A missing one stops configure with the Debian
# package that provides it, so the fix is one apt-get away.
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config")
endif()

function(kiln_require_pkg target module debian)
  pkg_check_modules(${target} IMPORTED_TARGET GLOBAL ${module})
  if(NOT ${target}_FOUND)
    message(FATAL_ERROR "${module} not found: apt-get install ${debian}  (or run scripts/setup)")
  endif()
endfunction()

kiln_require_pkg(SECCOMP libseccomp libseccomp-dev)
kiln_require_pkg(CAP libcap libcap-dev)
kiln_require_pkg(JANSSON jansson libjansson-dev)
kiln_require_pkg(CURL libcurl libcurl4-openssl-dev)
kiln_require_pkg(ARCHIVE libarchive libarchive-dev)
kiln_require_pkg(SQLITE3 sqlite3 libsqlite3-dev) # docs retrieval: FTS5 (orchestrator/propose/docs_index.h)
kiln_require_pkg(CRYPTO libcrypto libssl-dev)
if(KILN_BUILD_TESTS)
  kiln_require_pkg(CMOCKA cmocka libcmocka-dev)
endif()

# CUDA is optional for the build: without it kiln still builds the sandbox,
# the evaluator and the CPU backend, and says what it leaves out.
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  set(KILN_HAVE_CUDA ON)
  set(KILN_CUDA_VERSION "${CUDAToolkit_VERSION}")
  # The real architectures this toolkit compiles for, from Turing (sm_75)
  # on: what the helper kernels are built for and what --arch may name
  # (base/gpuarch.h).
  execute_process(COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} --list-gpu-code
                  OUTPUT_VARIABLE _codes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  string(REGEX MATCHALL "sm_[0-9]+" _codes "${_codes}")
  set(KILN_CUDA_ARCHS "")
  foreach(_c IN LISTS _codes)
    string(SUBSTRING ${_c} 3 -1 _n)
    if(_n GREATER_EQUAL 75)
      list(APPEND KILN_CUDA_ARCHS ${_n})
    endif()
  endforeach()
  list(SORT KILN_CUDA_ARCHS COMPARE NATURAL)
  list(REMOVE_DUPLICATES KILN_CUDA_ARCHS)
  if(NOT KILN_CUDA_ARCHS)
    message(FATAL_ERROR "kiln: ${CUDAToolkit_NVCC_EXECUTABLE} --list-gpu-code named no "
                        "architecture from sm_75 on; kiln needs a toolkit that supports Turing or newer")
  endif()
  # nvcc's flags for code kiln ships for the GPU: SASS for each of them and
  # PTX of the lowest, which a GPU newer than the toolkit JIT-compiles.
  set(KILN_CUDA_GENCODE "")
  foreach(_a IN LISTS KILN_CUDA_ARCHS)
    list(APPEND KILN_CUDA_GENCODE -gencode arch=compute_${_a},code=sm_${_a})
  endforeach()
  list(GET KILN_CUDA_ARCHS 0 _lowest)
  list(APPEND KILN_CUDA_GENCODE -gencode arch=compute_${_lowest},code=compute_${_lowest})
  message(STATUS "kiln: GPU architectures: ${KILN_CUDA_ARCHS}")
  message(STATUS "kiln: CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}")
else()
  set(KILN_HAVE_CUDA OFF)
  set(KILN_CUDA_VERSION "none")
  message(WARNING "kiln: no CUDA toolkit found (looked in /usr/local/cuda and PATH): "
                  "building without the GPU harness; the cpu backend, sandbox and evaluator "
                  "still build. Install the CUDA toolkit or pass -DCUDAToolkit_ROOT=DIR.")
endif()
