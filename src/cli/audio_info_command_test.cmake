# CTest script: `parley audio-info` on bad input prints exactly one line, "parley: error: FILE:
# problem", and exits with status 1; on a good file it prints the format and exits 0.
# Inputs: -DPARLEY=<parley executable> -DWORK_DIR=<scratch folder>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(expect_one_line_error file expected_problem)
  execute_process(COMMAND "${PARLEY}" audio-info "${file}"
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(expected "parley: error: ${file}: ${expected_problem}\n")
  if(NOT status EQUAL 1)
    message(FATAL_ERROR "audio-info ${file}: exit status ${status}, expected 1\nstderr: ${err}")
  endif()
  if(NOT err STREQUAL expected)
    message(FATAL_ERROR "audio-info ${file}: stderr\n  '${err}'\nexpected\n  '${expected}'")
  endif()
  if(NOT out STREQUAL "")
    message(FATAL_ERROR "audio-info ${file}: unexpected stdout '${out}'")
  endif()
endfunction()

expect_one_line_error("${WORK_DIR}/absent.wav" "no such file; check the path")
expect_one_line_error("${WORK_DIR}" "is a directory, not an audio file; give the path of a recording")
file(TOUCH "${WORK_DIR}/empty.wav")
expect_one_line_error("${WORK_DIR}/empty.wav" "the file is empty (0 bytes); it holds no audio")
file(WRITE "${WORK_DIR}/notes.wav" "These are meeting notes, not a recording.\n")
expect_one_line_error("${WORK_DIR}/notes.wav"
  "not audio that parley can decode (libsndfile: Format not recognised; libav: format not recognised); check that it is a recording, or convert it to WAV or FLAC")
file(WRITE "${WORK_DIR}/cut.wav" "RIFF")
expect_one_line_error("${WORK_DIR}/cut.wav"
  "truncated WAV header: the file ends after 4 bytes, inside the header; the file is damaged or was cut short")

# A good file, and the same file cut short, when sox is there to make one.
find_program(SOX sox)
if(SOX)
  set(good "${WORK_DIR}/tone.wav")
  execute_process(COMMAND "${SOX}" -n -r 44100 -c 2 -b 16 "${good}" synth 1.5 sine 440
                  RESULT_VARIABLE sox_status)
  if(NOT sox_status EQUAL 0)
    message(FATAL_ERROR "sox could not write ${good}")
  endif()
  execute_process(COMMAND "${PARLEY}" audio-info "${good}"
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0 OR NOT out MATCHES "channels: +2\n" OR NOT out MATCHES "sample rate: +44100 Hz"
     OR NOT out MATCHES "decoded: +24000 samples of 16000 Hz mono")
    message(FATAL_ERROR "audio-info ${good}: status ${status}\nstdout: ${out}\nstderr: ${err}")
  endif()
  # 1.5 s of 16-bit stereo is 264600 bytes after a 44-byte header; keep 10000 of them.
  file(READ "${good}" header LIMIT 4 HEX)
  find_program(TRUNCATE truncate)
  if(TRUNCATE AND header STREQUAL "52494646")
    message(STATUS "checking a WAV cut short")
    execute_process(COMMAND "${TRUNCATE}" -s 10044 "${good}")
    expect_one_line_error("${good}"
      "truncated: the WAV header declares 264600 bytes of audio but only 10000 are present; the file was cut short (to decode what is there, rewrite it with `sox --ignore-length IN OUT`)")
  endif()
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
