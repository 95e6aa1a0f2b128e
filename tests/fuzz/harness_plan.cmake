# plan.json parser (formats/harness_plan.c and harness_plan_baseline.c);
# sources compiled directly so the fuzz build needs no evaluator library.
kiln_fuzz_target(harness_plan SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_harness_plan.c
                 ${CMAKE_SOURCE_DIR}/formats/harness_plan.c
                 ${CMAKE_SOURCE_DIR}/formats/harness_plan_baseline.c ${CMAKE_SOURCE_DIR}/formats/tensor.c
                 LIBS kiln_base PkgConfig::JANSSON m)
target_include_directories(fuzz_harness_plan PRIVATE ${CMAKE_SOURCE_DIR}/evaluator ${CMAKE_SOURCE_DIR}/formats)
