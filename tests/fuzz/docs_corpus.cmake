# A documentation corpus file (`kiln docs search --docs-dir`, `kiln optimize --docs-dir`).
kiln_fuzz_target(docs_corpus SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_docs_corpus.c
                 ${CMAKE_SOURCE_DIR}/orchestrator/propose/docs_corpus.c
                 LIBS kiln_base)
target_include_directories(fuzz_docs_corpus PRIVATE ${KILN_ORCHESTRATOR_DIRS})
