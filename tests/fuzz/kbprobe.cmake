# The sandboxed probe's report (`kiln import kernelbench`): orchestrator/kbprobe.c.
kiln_fuzz_target(kbprobe
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_kbprobe.c ${CMAKE_SOURCE_DIR}/orchestrator/wlgen/kbprobe.c
          ${CMAKE_SOURCE_DIR}/orchestrator/wlgen/kbimport.c
  LIBS kiln_pipeline kiln_evaluator kiln_base)
target_include_directories(fuzz_kbprobe PRIVATE ${KILN_ORCHESTRATOR_DIRS}
                                                ${CMAKE_BINARY_DIR}/generated)
