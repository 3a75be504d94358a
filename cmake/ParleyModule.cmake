# One static library per architectural module (core, audio, eval, ...), so each module's
# dependencies are explicit and a module's tests link only what that module needs.
function(parley_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion)
  if(PARLEY_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# parley_module(<name> SOURCES ... [DEPS ...]) -> static library parley_<name>
function(parley_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(parley_${name} STATIC ${ARG_SOURCES})
  target_include_directories(parley_${name} PUBLIC "${PROJECT_SOURCE_DIR}/src"
                                                   "${PROJECT_SOURCE_DIR}/include")
  target_link_libraries(parley_${name} PUBLIC ${ARG_DEPS})
  set_target_properties(parley_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  parley_warnings(parley_${name})
endfunction()

# parley_test(<name> SOURCES ... [DEPS ...]) -> GoogleTest executable registered with CTest
function(parley_test name)
  if(NOT PARLEY_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} parley_testing GTest::gtest GTest::gtest_main)
  parley_warnings(${name})
  # The label lets `scripts/test --targets` run one program's tests.
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES ENVIRONMENT "PARLEY_SHARED_DIR=${PARLEY_SHARED_DIR}"
                                  LABELS ${name})
endfunction()
