# CTest script: the options of parley itself. `--version` and `version` print the same words;
# --log-level and -v work before and after the command's name; SPDLOG_LEVEL still works and the
# flags win over it.
# Inputs: -DPARLEY=<parley executable>.
function(run_parley expected_status)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL expected_status)
    message(FATAL_ERROR "${ARGN}: exit status ${status}, expected ${expected_status}\n"
                        "stdout: ${out}\nstderr: ${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

run_parley(0 "${PARLEY}" --version)
set(flag_version "${out}")
run_parley(0 "${PARLEY}" version)
if(NOT flag_version STREQUAL out OR NOT out MATCHES "^parley [0-9]+\\.[0-9]+\\.[0-9]+")
  message(FATAL_ERROR "--version printed '${flag_version}', version printed '${out}'")
endif()

# The flags parse before and after the command, and name themselves in --help.
run_parley(0 "${PARLEY}" --log-level warn version)
run_parley(0 "${PARLEY}" version --log-level off)
run_parley(0 "${PARLEY}" -v version)
run_parley(0 "${PARLEY}" version -vv)
run_parley(0 "${PARLEY}" --help)
if(NOT out MATCHES "--log-level" OR NOT out MATCHES "-v,--verbose")
  message(FATAL_ERROR "parley --help does not name --log-level and -v:\n${out}")
endif()

# Where a command logs at debug level (libav's lines on a file it cannot read), -v shows them,
# the default level does not, SPDLOG_LEVEL=debug does, and --log-level wins over SPDLOG_LEVEL.
set(garbage "${CMAKE_CURRENT_BINARY_DIR}/global_flags_test_garbage.mp3")
string(REPEAT "not an mp3 " 200 text)
file(WRITE "${garbage}" "${text}")
run_parley(1 "${PARLEY}" audio-info "${garbage}")
if(err MATCHES "debug")
  message(FATAL_ERROR "debug lines at the default level:\n${err}")
endif()
run_parley(1 "${PARLEY}" audio-info "${garbage}" -v)
if(NOT err MATCHES "debug")
  message(FATAL_ERROR "-v shows no debug line:\n${err}")
endif()
run_parley(1 "${CMAKE_COMMAND}" -E env SPDLOG_LEVEL=debug "${PARLEY}" audio-info "${garbage}")
if(NOT err MATCHES "debug")
  message(FATAL_ERROR "SPDLOG_LEVEL=debug shows no debug line:\n${err}")
endif()
run_parley(1 "${CMAKE_COMMAND}" -E env SPDLOG_LEVEL=debug "${PARLEY}" --log-level info audio-info
           "${garbage}")
if(err MATCHES "debug")
  message(FATAL_ERROR "--log-level info did not win over SPDLOG_LEVEL=debug:\n${err}")
endif()
file(REMOVE "${garbage}")
