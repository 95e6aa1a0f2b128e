# compile/result.json, handed from a compile worker to kiln (optimize --jobs).
kiln_fuzz_target(compile_result SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_compile_result.c
                 ${CMAKE_SOURCE_DIR}/pipeline/compile_json.c
                 LIBS kiln_base PkgConfig::JANSSON)
target_include_directories(fuzz_compile_result PRIVATE ${CMAKE_SOURCE_DIR}/evaluator ${CMAKE_SOURCE_DIR}/formats ${CMAKE_SOURCE_DIR}/pipeline)
