# kiln bench kernelbench's bench.json as the bench reads it back:
# orchestrator/cli/bench_kb.c.
kiln_fuzz_target(bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_bench.c ${CMAKE_SOURCE_DIR}/orchestrator/cli/bench_kb.c
  LIBS kiln_base)
target_include_directories(fuzz_bench PRIVATE ${KILN_ORCHESTRATOR_DIRS}
                           ${CMAKE_SOURCE_DIR}/orchestrator/cli)
