# candidate.cubin (an ELF image out of the compile sandbox): the heap check.
kiln_fuzz_target(cubin SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_cubin.c
                 ${CMAKE_SOURCE_DIR}/formats/cubin.c LIBS kiln_base)
target_include_directories(fuzz_cubin PRIVATE ${CMAKE_SOURCE_DIR}/evaluator ${CMAKE_SOURCE_DIR}/formats)
