# kiln-harness-cuda --device-props output (a Slurm node's report, too).
kiln_fuzz_target(devprobe SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_devprobe.c
                 ${CMAKE_SOURCE_DIR}/evaluator/devlimits.c ${CMAKE_SOURCE_DIR}/evaluator/expr.c
                 LIBS kiln_base PkgConfig::JANSSON)
target_include_directories(fuzz_devprobe PRIVATE ${CMAKE_SOURCE_DIR}/evaluator ${CMAKE_SOURCE_DIR}/formats)
