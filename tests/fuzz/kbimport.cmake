# A KernelBench problem file (`kiln import kernelbench`): orchestrator/kbimport.c.
kiln_fuzz_target(kbimport
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_kbimport.c ${CMAKE_SOURCE_DIR}/orchestrator/wlgen/kbimport.c
  LIBS kiln_evaluator kiln_base)
target_include_directories(fuzz_kbimport PRIVATE ${KILN_ORCHESTRATOR_DIRS})
