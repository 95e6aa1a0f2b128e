# A community workload tarball (POST /v1/submissions as application/x-tar, kiln serve).
if(KILN_SERVICE)
  kiln_fuzz_target(serve_community SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_serve_community.c
                   ${CMAKE_SOURCE_DIR}/service/community.c
                   LIBS kiln_evaluator kiln_base PkgConfig::JANSSON)
  target_include_directories(fuzz_serve_community PRIVATE ${CMAKE_SOURCE_DIR}/service)
endif()
