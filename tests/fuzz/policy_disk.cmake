# The compiled-policy record every kiln sandbox reads from the runtime directory.
kiln_fuzz_target(policy_disk SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_policy_disk.c
                 LIBS kiln_sandbox kiln_base)
