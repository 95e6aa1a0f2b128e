kiln_fuzz_target(npy SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_npy.c LIBS kiln_evaluator)
