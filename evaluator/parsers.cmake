# kiln_parse: the parsers of untrusted workload and candidate text (size
# expressions, workload.json, launch-plan directives) and plan resolution.
add_library(kiln_parse STATIC
  ${CMAKE_CURRENT_LIST_DIR}/expr.c
  ${CMAKE_CURRENT_LIST_DIR}/candidate.c
  ${CMAKE_CURRENT_LIST_DIR}/workload.c
  ${CMAKE_CURRENT_LIST_DIR}/plan.c)
target_include_directories(kiln_parse PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(kiln_parse PUBLIC kiln_base kiln_eval PkgConfig::JANSSON)
