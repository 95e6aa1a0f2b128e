kiln_fuzz_target(workload SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_workload.c LIBS kiln_evaluator)
