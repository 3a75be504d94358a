# PARLEY_ABI_VERSION: the C ABI number, read from its one definition in include/parley/parley.h,
# so that the SONAME, the symbol version of src/api/parley.map.in, parley.pc and the header
# cannot disagree.
file(STRINGS "${PROJECT_SOURCE_DIR}/include/parley/parley.h" parley_abi_line
     REGEX "^#define PARLEY_ABI_VERSION [0-9]+$")
string(REGEX REPLACE "^#define PARLEY_ABI_VERSION ([0-9]+)$" "\\1" PARLEY_ABI_VERSION
       "${parley_abi_line}")
if(NOT PARLEY_ABI_VERSION MATCHES "^[0-9]+$")
  message(FATAL_ERROR "include/parley/parley.h has no '#define PARLEY_ABI_VERSION <number>' line")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${PROJECT_SOURCE_DIR}/include/parley/parley.h")
