# timings.json (written by the sandboxed harness) and verdict JSON (run
# records) parsers; sources compiled directly so the fuzz build needs no
# evaluator library.
kiln_fuzz_target(timings SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_timings.c
                 ${CMAKE_SOURCE_DIR}/evaluator/timings.c
                 LIBS kiln_base PkgConfig::JANSSON m)
target_include_directories(fuzz_timings PRIVATE ${CMAKE_SOURCE_DIR}/evaluator ${CMAKE_SOURCE_DIR}/formats)
kiln_fuzz_target(verdict SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_verdict.c
                 ${CMAKE_SOURCE_DIR}/evaluator/verdict.c ${CMAKE_SOURCE_DIR}/evaluator/stats.c
                 ${CMAKE_SOURCE_DIR}/formats/failure_kind.c
                 ${CMAKE_SOURCE_DIR}/evaluator/compare.c
                 ${CMAKE_SOURCE_DIR}/evaluator/perfcmp.c
                 LIBS kiln_base PkgConfig::JANSSON m)
target_include_directories(fuzz_verdict PRIVATE ${CMAKE_SOURCE_DIR}/evaluator ${CMAKE_SOURCE_DIR}/formats)
