# The LLM server's reply envelope and the model's structured answer: both
# parsers in orchestrator/propose/llm_reply.c (no curl needed).
kiln_fuzz_target(llm_reply
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_llm_reply.c ${CMAKE_SOURCE_DIR}/orchestrator/propose/llm_reply.c
  LIBS kiln_base PkgConfig::JANSSON)
target_include_directories(fuzz_llm_reply PRIVATE ${KILN_ORCHESTRATOR_DIRS})
