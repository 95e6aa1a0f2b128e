# kiln archive's reader: a .tar.zst from anyone (orchestrator/records/runarchive.c),
# and the MANIFEST text inside it (orchestrator/records/manifest.c).
kiln_fuzz_target(runarchive SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_runarchive.c LIBS kiln_orchestrator)
