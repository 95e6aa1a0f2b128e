# kiln report's renderer on a run record from anyone (orchestrator/records/report*.c).
kiln_fuzz_target(report SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_report.c LIBS kiln_orchestrator)
target_include_directories(fuzz_report PRIVATE ${KILN_ORCHESTRATOR_DIRS})
