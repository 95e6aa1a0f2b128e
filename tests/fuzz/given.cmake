kiln_fuzz_target(given SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_given.c LIBS kiln_pipeline)
