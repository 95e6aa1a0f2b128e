# X-Forwarded-For as kiln serve --trusted-proxy reads it (service/conn.c).
if(KILN_SERVICE)
  kiln_fuzz_target(serve_forwarded SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_serve_forwarded.c
                   LIBS kiln_service)
endif()
