# cmake -DSOURCE_DIR=... -P presets_test.cmake: CMakePresets.json is read only when someone
# configures with it, so a broken edit would first show in a user's scripts/setup. Checks that the
# file is valid for this CMake and has every preset the scripts name.
execute_process(COMMAND "${CMAKE_COMMAND}" --list-presets=all WORKING_DIRECTORY "${SOURCE_DIR}"
                RESULT_VARIABLE status OUTPUT_VARIABLE listing ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "cmake --list-presets failed (${status}):\n${errors}")
endif()
# Each section of the listing, up to the next blank line followed by "Available".
foreach(kind_presets IN ITEMS "configure:release;asan;tsan;fuzz" "build:user;release"
                              "test:release;asan;tsan")
  string(REPLACE ":" ";" parts "${kind_presets}")
  list(POP_FRONT parts kind)
  string(REGEX MATCH "Available ${kind} presets:\n\n([^A]|A[^v])*" section "${listing}")
  foreach(preset IN LISTS parts)
    if(NOT section MATCHES "\"${preset}\"")
      message(FATAL_ERROR "CMakePresets.json has no ${kind} preset '${preset}' "
                          "(the scripts and README.md name it):\n${listing}")
    endif()
  endforeach()
endforeach()
