# A model's generated workload (`kiln optimize --description`): the answer
# parser in orchestrator/wlgen/wlgen_reply.c over llm_reply.c (no curl needed).
kiln_fuzz_target(wlgen_reply
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_wlgen_reply.c ${CMAKE_SOURCE_DIR}/orchestrator/wlgen/wlgen_reply.c
          ${CMAKE_SOURCE_DIR}/orchestrator/propose/llm_reply.c
  LIBS kiln_evaluator kiln_base PkgConfig::JANSSON)
target_include_directories(fuzz_wlgen_reply PRIVATE ${KILN_ORCHESTRATOR_DIRS})
