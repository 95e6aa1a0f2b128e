# spec.json / result.json of --executor slurm (the shared spool is hostile ground).
kiln_fuzz_target(sbspec SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_sbspec.c
                 ${CMAKE_SOURCE_DIR}/pipeline/sbspec.c
                 LIBS kiln_sandbox kiln_base PkgConfig::JANSSON)
target_include_directories(fuzz_sbspec PRIVATE ${CMAKE_SOURCE_DIR}/pipeline)
