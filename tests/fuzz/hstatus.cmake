# status.json (written by the sandboxed harness).
kiln_fuzz_target(hstatus SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_hstatus.c
                 ${CMAKE_SOURCE_DIR}/evaluator/hstatus.c ${CMAKE_SOURCE_DIR}/formats/failure_kind.c
                 LIBS kiln_base PkgConfig::JANSSON)
target_include_directories(fuzz_hstatus PRIVATE ${CMAKE_SOURCE_DIR}/evaluator ${CMAKE_SOURCE_DIR}/formats)
