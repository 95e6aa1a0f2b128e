kiln_fuzz_target(expr SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_expr.c LIBS kiln_evaluator)
