# CTest script: `parley models list|verify|fetch` end to end, without network access.
# Inputs: -DPARLEY=<parley executable> -DWORK_DIR=<scratch folder> -DSHARED_DIR=<../shared>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run_parley expected_status)
  execute_process(COMMAND "${PARLEY}" ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT status EQUAL expected_status)
    message(FATAL_ERROR "parley ${ARGN}: exit status ${status}, expected ${expected_status}\n"
                        "stdout: ${out}\nstderr: ${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

function(expect_match text pattern what)
  string(FIND "${text}" "${pattern}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "${what}: expected to find\n  '${pattern}'\nin\n${text}")
  endif()
endfunction()

# --models naming a folder that does not exist is an error, not a silent fall-through to the
# other folders' models.
run_parley(1 models --models "${WORK_DIR}/empty" list)
expect_match("${err}" "the models folder '${WORK_DIR}/empty' (--models) does not exist" "missing --models")

# list: the registry, and the folder given with --models searched first.
file(MAKE_DIRECTORY "${WORK_DIR}/empty")
run_parley(0 models --models "${WORK_DIR}/empty" list)
expect_match("${out}" "resnet34-speed-twin" "models list")
expect_match("${out}" "1. ${WORK_DIR}/empty (--models)" "models list")
expect_match("${out}" "SPEED TWIN, random weights" "models list")

# verify: nothing there is an error that says to fetch.
run_parley(1 models verify --dir "${WORK_DIR}/empty")
expect_match("${err}" "parley: error: no model files found in 1. ${WORK_DIR}/empty (--dir); run `parley models fetch`" "verify empty")

# fetch: the speed twin is generated, never downloaded.
run_parley(1 models fetch --dir "${WORK_DIR}/empty" --id resnet34-speed-twin)
expect_match("${err}" "is generated, not downloaded: run `/usr/bin/python3 tools/make_speed_twin.py" "fetch twin")

# Without the shared folder the rest is skipped; with it, a missing model is a failure (a renamed
# file must not silently drop these checks).
set(fp16 "${SHARED_DIR}/models/segmentation-3.0-fp16.onnx")
if(IS_DIRECTORY "${SHARED_DIR}" AND NOT EXISTS "${fp16}")
  message(FATAL_ERROR "${fp16} not found under the shared folder: restore it, or update the test")
endif()
if(EXISTS "${fp16}")
  file(MAKE_DIRECTORY "${WORK_DIR}/good" "${WORK_DIR}/bad")
  file(COPY "${fp16}" DESTINATION "${WORK_DIR}/good")
  # A file that verifies is not a pipeline that runs: without embedding and PLDA models the
  # command says so and fails.
  run_parley(1 models verify --dir "${WORK_DIR}/good")
  expect_match("${out}" "OK       segmentation-3.0-fp16" "verify good")
  expect_match("${out}" "1 verified, 0 failed" "verify good")
  expect_match("${out}" "pipeline: cannot run (no embedding, plda, xvec_transform model)" "verify good")
  expect_match("${err}" "parley: error: the pipeline cannot run from 1. ${WORK_DIR}/good (--dir): no embedding, plda, xvec_transform model; run `parley models fetch --role ROLE`" "verify good")

  # The same file with its last kilobyte cut off.
  find_program(HEAD head)
  if(HEAD)
    execute_process(COMMAND "${HEAD}" -c -1024 "${fp16}"
                    OUTPUT_FILE "${WORK_DIR}/bad/segmentation-3.0-fp16.onnx")
    run_parley(1 models verify --dir "${WORK_DIR}/bad")
    expect_match("${out}" "FAILED   segmentation-3.0-fp16" "verify bad")
    expect_match("${out}" "sha256 mismatch: expected b0acba8e4cc30e8ec2bd33075ce95f282d66acab86fb155860d8deddbfacd30c, actual" "verify bad")
    expect_match("${err}" "parley: error: 1 model file failed verification" "verify bad")
  endif()
endif()
# A complete folder (the build's, once scripts/prepare-models made it) runs, with the speed twin
# named as such.
if(MODELS_DIR AND EXISTS "${MODELS_DIR}/resnet34-speed-twin.onnx")
  run_parley(0 models verify --dir "${MODELS_DIR}")
  expect_match("${out}" "pipeline: can run (with the speed twin" "verify complete folder")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
