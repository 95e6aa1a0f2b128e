# A run's summary.json as `kiln summarize` reads it: orchestrator/fastp.c.
kiln_fuzz_target(summary
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_summary.c ${CMAKE_SOURCE_DIR}/orchestrator/records/fastp.c
  LIBS kiln_base)
target_include_directories(fuzz_summary PRIVATE ${KILN_ORCHESTRATOR_DIRS})
