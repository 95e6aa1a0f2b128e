# The JSON body of POST /v1/submissions (kiln serve), from any client.
if(KILN_SERVICE)
  kiln_fuzz_target(serve_submission SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_serve_submission.c
                   ${CMAKE_SOURCE_DIR}/service/submission.c
                   LIBS kiln_base PkgConfig::JANSSON)
  target_include_directories(fuzz_serve_submission PRIVATE ${CMAKE_SOURCE_DIR}/service)
endif()
