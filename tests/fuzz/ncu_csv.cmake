# ncu's CSV output (printed inside the profile sandbox).
kiln_fuzz_target(ncu_csv SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_ncu_csv.c
                 ${CMAKE_SOURCE_DIR}/orchestrator/profile/ncu_csv.c
                 LIBS kiln_base m)
target_include_directories(fuzz_ncu_csv PRIVATE ${KILN_ORCHESTRATOR_DIRS})
