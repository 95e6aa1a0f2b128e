# kiln_judge: the evaluator's judgement (VERDICT.md): timings.json parser,
# output comparison, statistics, verdicts and ranking.
add_library(kiln_judge STATIC
            ${CMAKE_CURRENT_LIST_DIR}/timings.c
            ${CMAKE_CURRENT_LIST_DIR}/compare.c
            ${CMAKE_CURRENT_LIST_DIR}/stats.c
            ${CMAKE_CURRENT_LIST_DIR}/verdict.c
            ${CMAKE_CURRENT_LIST_DIR}/rank.c
            ${CMAKE_CURRENT_LIST_DIR}/hstatus.c)
target_include_directories(kiln_judge PUBLIC ${CMAKE_CURRENT_LIST_DIR})
find_package(Threads REQUIRED) # compare.c spreads big comparisons over threads
target_link_libraries(kiln_judge PUBLIC kiln_base PkgConfig::JANSSON m Threads::Threads)
