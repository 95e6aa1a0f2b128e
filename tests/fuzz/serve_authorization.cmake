# The Authorization header of every kiln serve request (Bearer, or Basic on /mine).
if(KILN_SERVICE)
  kiln_fuzz_target(serve_authorization SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_serve_authorization.c
                   ${CMAKE_SOURCE_DIR}/service/authorization.c
                   LIBS kiln_base)
  target_include_directories(fuzz_serve_authorization PRIVATE ${CMAKE_SOURCE_DIR}/service)
endif()
