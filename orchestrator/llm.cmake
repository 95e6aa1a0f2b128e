# kiln_llm: the LLM proposer's transport (llm.c), API-key loading (apikey.c)
# and the strict parser of the server's and the model's replies
# (llm_reply.c). See LLM.md. Callers run curl_global_init() in main().
add_library(kiln_llm STATIC ${CMAKE_CURRENT_LIST_DIR}/llm.c ${CMAKE_CURRENT_LIST_DIR}/apikey.c
                            ${CMAKE_CURRENT_LIST_DIR}/llm_reply.c)
target_link_libraries(kiln_llm PUBLIC kiln_base PkgConfig::CURL PkgConfig::JANSSON)
