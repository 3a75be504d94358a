# CTest script: what `parley cache verify` advises is true. An entry whose artifact was rewritten
# with the same size fails verification; the `verify --fix` that the message names removes it,
# and verify then passes. A folder that parley did not write is reported and left alone.
# Inputs: -DPARLEY=<parley executable> -DWORK_DIR=<scratch folder>.
file(REMOVE_RECURSE "${WORK_DIR}")
set(cache "${WORK_DIR}/cache")
file(WRITE "${cache}/.parley-compile-cache" "")
# A migraphx entry (no MIGraphX here, so its environment is not judged stale) laid out as
# CompileCache::Build::commit writes one.
set(entry "${cache}/migraphx/0123456789abcdef0123456789abcdef")
string(SHA256 original "compiled")
string(SHA256 key_digest "format=1")
file(WRITE "${entry}/manifest.json"
     "{\"format\": 1, \"key\": {\"provider\": \"migraphx\", \"model_name\": \"segmentation\", "
     "\"inputs\": \"waveform:1x1x160000\", \"environment\": {\"ort_version\": \"1.29.0\", "
     "\"provider_library\": \"libmigraphx.so\", \"device\": \"gfx942\"}}, "
     "\"key_canonical\": \"format=1\", \"key_sha256\": \"${key_digest}\", \"created_unix\": 1, "
     "\"build_seconds\": 1.5, \"files\": [{\"path\": \"artifacts/model.mxr\", \"size\": 8, "
     "\"sha256\": \"${original}\"}]}")
file(WRITE "${entry}/artifacts/model.mxr" "COMPILED")  # 8 bytes, not the ones hashed
file(WRITE "${cache}/migraphx/fedcba9876543210fedcba9876543210/artifacts/x.bin" "no manifest")

function(run_parley expected_status)
  execute_process(COMMAND "${PARLEY}" cache ${ARGN} --cache-dir "${cache}"
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL expected_status)
    message(FATAL_ERROR "parley cache ${ARGN}: exit status ${status}, expected ${expected_status}\n"
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

run_parley(1 verify)
expect_match("${out}" "artifacts/model.mxr does not match its sha256" "verify")
expect_match("${out}" "fedcba9876543210fedcba9876543210: corrupt: manifest.json is missing (not written by parley: remove it by hand" "verify")
expect_match("${err}" "2 of 2 compiled-graph cache entries are corrupt or stale; `parley cache verify --fix` removes 1 entry (rebuilt when next needed); the others stay" "verify")
if(NOT EXISTS "${entry}")
  message(FATAL_ERROR "verify without --fix removed ${entry}")
endif()

# The advice, followed: the corrupt entry goes, the folder parley did not write stays.
run_parley(1 verify --fix)
expect_match("${out}" "removed 1 entry" "verify --fix")
expect_match("${err}" "1 faulty entry left as each line above says" "verify --fix")
if(EXISTS "${entry}" OR NOT EXISTS "${cache}/migraphx/fedcba9876543210fedcba9876543210/artifacts/x.bin")
  message(FATAL_ERROR "verify --fix removed the wrong folders")
endif()

file(REMOVE_RECURSE "${cache}/migraphx/fedcba9876543210fedcba9876543210")
run_parley(0 verify)
expect_match("${out}" "0 entries, all valid" "verify after --fix")
file(REMOVE_RECURSE "${WORK_DIR}")
