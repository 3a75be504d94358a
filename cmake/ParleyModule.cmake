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

# parley_shared_test(<name> TIMEOUT <seconds> COMMAND <command>... [ENVIRONMENT <var=value>...]
#                    [RESOURCE_LOCK <lock>]) -> a CTest test that reads the shared folder (models,
# recordings): PARLEY_SHARED_DIR in its environment (before ENVIRONMENT's entries), and exit
# status 77 (the folder is absent) counts as skipped.
function(parley_shared_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;RESOURCE_LOCK" "COMMAND;ENVIRONMENT" ${ARGN})
  if(NOT ARG_COMMAND OR NOT ARG_TIMEOUT OR ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "parley_shared_test(${name}): give TIMEOUT and COMMAND (unknown: "
                        "${ARG_UNPARSED_ARGUMENTS})")
  endif()
  add_test(NAME ${name} COMMAND ${ARG_COMMAND})
  set(environment "PARLEY_SHARED_DIR=${PARLEY_SHARED_DIR}" ${ARG_ENVIRONMENT})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${ARG_TIMEOUT}
                       ENVIRONMENT "${environment}")
  if(ARG_RESOURCE_LOCK)
    set_tests_properties(${name} PROPERTIES RESOURCE_LOCK ${ARG_RESOURCE_LOCK})
  endif()
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
