# An earlier run's record as `kiln optimize --tuner-run` reads it: orchestrator/tuner_findings_parse.c.
kiln_fuzz_target(findings
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_findings.c ${CMAKE_SOURCE_DIR}/orchestrator/propose/tuner_findings_parse.c
          ${CMAKE_SOURCE_DIR}/orchestrator/profile/ncu_csv.c
  LIBS kiln_base m)
target_include_directories(fuzz_findings PRIVATE ${KILN_ORCHESTRATOR_DIRS} ${CMAKE_SOURCE_DIR}/evaluator)
