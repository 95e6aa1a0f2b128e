kiln_fuzz_target(candidate SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_candidate.c LIBS kiln_evaluator)
