# The harness: evaluator/HARNESS.md. Included from evaluator/CMakeLists.txt.
#
# kiln-harness-cpu / kiln-harness-cuda: the programs that run inside the
# sandbox, from harness/ (in-sandbox code only) plus the format codecs both
# sides share (the plan, tensors, .npy) and three files of base/. They
# compile their helpers in directly and link jansson statically, so they need nothing beyond libc, libm, libdl (and
# libcuda.so.1 from the driver for the CUDA one).

find_package(Threads REQUIRED) # the watchdog thread (harness/hx_watchdog.h)
find_library(KILN_JANSSON_STATIC NAMES libjansson.a)
if(KILN_JANSSON_STATIC)
  set(_hx_jansson ${KILN_JANSSON_STATIC})
else()
  message(WARNING "kiln: libjansson.a not found: the harness links libjansson.so, which the "
                  "sandbox must then provide (apt-get install libjansson-dev)")
  set(_hx_jansson PkgConfig::JANSSON)
endif()

set(KILN_HARNESS_SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/harness/hx_core.c
    ${CMAKE_CURRENT_SOURCE_DIR}/harness/hx_baseline.c
    ${CMAKE_CURRENT_SOURCE_DIR}/harness/hx_io.c
    ${CMAKE_CURRENT_SOURCE_DIR}/harness/hx_watchdog.c
    ${CMAKE_CURRENT_SOURCE_DIR}/harness_plan.c
    ${CMAKE_CURRENT_SOURCE_DIR}/cubin.c
    ${CMAKE_CURRENT_SOURCE_DIR}/harness_plan_baseline.c
    ${CMAKE_CURRENT_SOURCE_DIR}/npy.c
    ${CMAKE_CURRENT_SOURCE_DIR}/npy_io.c
    ${CMAKE_CURRENT_SOURCE_DIR}/tensor.c
    ${CMAKE_CURRENT_SOURCE_DIR}/failure_kind.c
    ${CMAKE_SOURCE_DIR}/base/error.c
    ${CMAKE_SOURCE_DIR}/base/fdio.c
    ${CMAKE_SOURCE_DIR}/base/json_nesting.c
    ${CMAKE_SOURCE_DIR}/base/json_strict.c
    ${CMAKE_SOURCE_DIR}/base/suggest.c)

function(kiln_harness_binary name)
  add_executable(${name} ${ARGN} ${KILN_HARNESS_SOURCES})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                             ${CMAKE_CURRENT_SOURCE_DIR}/harness ${CMAKE_SOURCE_DIR}/base
                             ${JANSSON_INCLUDE_DIRS})
  target_link_libraries(${name} PRIVATE ${_hx_jansson} ${CMAKE_DL_LIBS} m Threads::Threads)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()

kiln_harness_binary(kiln-harness-cpu harness/main_cpu.c harness/hx_cpu.c)

if(KILN_HAVE_CUDA)
  # The helper kernels (fingerprint): SASS for every architecture the
  # toolkit supports from sm_75 on (KILN_CUDA_ARCHS, cmake/KilnDeps.cmake),
  # plus PTX of the lowest (KILN_CUDA_GENCODE), so a GPU newer than the
  # toolkit JIT-compiles them. Embedded as an 8-byte aligned array.
  set(_hx_fatbin ${CMAKE_CURRENT_BINARY_DIR}/kiln_helpers.fatbin)
  set(_hx_fatbin_h ${CMAKE_CURRENT_BINARY_DIR}/generated/kiln_helpers_fatbin.h)
  add_custom_command(
    OUTPUT ${_hx_fatbin}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -fatbin -O3
            ${KILN_CUDA_GENCODE}
            -I${CMAKE_CURRENT_SOURCE_DIR}/harness
            -o ${_hx_fatbin} ${CMAKE_CURRENT_SOURCE_DIR}/harness/kiln_helpers.cu
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/harness/kiln_helpers.cu
            ${CMAKE_CURRENT_SOURCE_DIR}/harness/hx_fp.h
    COMMENT "nvcc: harness helper kernels")
  add_custom_command(
    OUTPUT ${_hx_fatbin_h}
    COMMAND ${CMAKE_COMMAND} -DIN=${_hx_fatbin} -DOUT=${_hx_fatbin_h} -DNAME=kiln_helpers_fatbin
            -P ${CMAKE_CURRENT_SOURCE_DIR}/harness/embed.cmake
    DEPENDS ${_hx_fatbin} ${CMAKE_CURRENT_SOURCE_DIR}/harness/embed.cmake
    COMMENT "embedding the helper kernels")
  kiln_harness_binary(kiln-harness-cuda harness/main_cuda.c harness/hx_cuda.c ${_hx_fatbin_h})
  target_include_directories(kiln-harness-cuda PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated
                             ${CUDAToolkit_INCLUDE_DIRS})
  # The driver API only: libcuda.so.1 comes from the driver, never cudart.
  target_link_libraries(kiln-harness-cuda PRIVATE CUDA::cuda_driver)
endif()

if(TARGET CUDA::nvrtc)
  # kiln-nvrtc: the compiler of --compiler nvrtc, run in the `nvrtc` sandbox
  # (libnvrtc from the toolkit, found through the build's RPATH, which the
  # compile image binds).
  add_executable(kiln-nvrtc harness/kiln_nvrtc.c)
  # CUDA::nvrtc drags in libcuda.so.1, which NVRTC does not need and the
  # compile image (no driver) does not have.
  target_link_libraries(kiln-nvrtc PRIVATE CUDA::nvrtc)
  target_link_options(kiln-nvrtc PRIVATE -Wl,--as-needed)
  # Never sanitized: LeakSanitizer's exit-time clone is refused by the
  # nvrtc policy (no new processes), as it would be for the harness.
  if(KILN_SANITIZE)
    target_compile_options(kiln-nvrtc PRIVATE -fno-sanitize=all)
    target_link_options(kiln-nvrtc PRIVATE -fno-sanitize=all)
  endif()
  list(GET CUDAToolkit_INCLUDE_DIRS 0 _kiln_cuda_inc)
  target_compile_definitions(kiln-nvrtc PRIVATE KILN_CUDA_INCLUDE="${_kiln_cuda_inc}")
  set_target_properties(kiln-nvrtc PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
endif()
