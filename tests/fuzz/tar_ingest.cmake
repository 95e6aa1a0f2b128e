kiln_fuzz_target(tar_ingest SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_tar_ingest.c LIBS kiln_evaluator)
