# CTest script: option values out of range are usage errors (exit status 2) reported in one short
# line in parley's words, and `parley cache prune` leaves a folder that is not a cache alone.
# Inputs: -DPARLEY=<parley executable> -DWORK_DIR=<scratch folder>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(WRITE "${WORK_DIR}/talk.rttm" "SPEAKER talk 1 0.000 2.000 <NA> <NA> alice <NA> <NA>\n")
file(WRITE "${WORK_DIR}/talk.srt" "1\n00:00:00,100 --> 00:00:01,800\nHello.\n")
file(WRITE "${WORK_DIR}/audio.wav" "")

# expect_usage_error(<stderr regex> <arguments>...): exit status 2, one line matching the regex.
function(expect_usage_error pattern)
  execute_process(COMMAND "${PARLEY}" ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines lines)
  string(LENGTH "${err}" length)
  if(NOT status EQUAL 2 OR NOT err MATCHES "${pattern}" OR NOT lines EQUAL 1 OR length GREATER 300)
    message(FATAL_ERROR "parley ${ARGN}: exit status ${status} (2 expected), stderr:\n${err}"
                        "expected one short line matching '${pattern}'")
  endif()
endfunction()

expect_usage_error("--num-speakers: must be 1 to 1000 \\(got 0\\)"
                   diarize "${WORK_DIR}/audio.wav" --num-speakers 0)
expect_usage_error("--segmentation-batch: must be at least 1 \\(got 0\\)"
                   diarize "${WORK_DIR}/audio.wav" --segmentation-batch 0)
expect_usage_error("--gap-tolerance: must be at least 0 \\(got -1\\)"
                   fuse --transcript "${WORK_DIR}/talk.srt" --rttm "${WORK_DIR}/talk.rttm"
                   --gap-tolerance -1)
# The transcript's format is one of the option table's choices (transcript_format).
expect_usage_error("--transcript-format: expected one of auto, srt, vtt, ctm, whisper-cpp-json, openai-json \\(got 'docx'\\)"
                   fuse --transcript "${WORK_DIR}/talk.srt" --rttm "${WORK_DIR}/talk.rttm"
                   --transcript-format docx)
expect_usage_error("--gap-tolerance: must be at least 0 \\(got -1\\)"
                   diarize "${WORK_DIR}/audio.wav" --transcript "${WORK_DIR}/talk.srt" --gap-tolerance -1)
# The bound is this machine's (4 per core), and the message says so: `--threads 16` from a 16-core
# host's docs read as a fixed limit on 2 cores.
expect_usage_error("--threads: must be at most [0-9]+ \\(got 100000\\) on this machine: the bound is 4 threads per core \\([0-9]+ cores here\\)"
                   diarize "${WORK_DIR}/audio.wav" --threads 100000)
expect_usage_error("--log-level: .*trace" version --log-level loud)
# 0 is every core, as the table, the C API and Python take it.
expect_usage_error("--threads: must be at least 0 \\(got -1\\)" bench "${WORK_DIR}/audio.wav" --threads=-1)
expect_usage_error("--max-speakers: expects a number \\(got 'many'\\)"
                   diarize "${WORK_DIR}/audio.wav" --max-speakers many)
expect_usage_error("--collar: expects a number" eval --list x --collar 1e999)
expect_usage_error("--no-such-flag" diarize "${WORK_DIR}/audio.wav" --no-such-flag)
# An option without a field of its own (registered from the table in one loop) is checked as
# every flag is: a usage error naming it.
expect_usage_error("--sincnet-per-chunk = maybe"
                   diarize "${WORK_DIR}/audio.wav" --sincnet-per-chunk=maybe)
# The table's message, as the C API and Python give it after the option's name.
expect_usage_error("--step: must be 0.1 to 10 \\(got 11\\)" diarize "${WORK_DIR}/audio.wav" --step 11)
expect_usage_error("--embedding-features: .*auto"
                   diarize "${WORK_DIR}/audio.wav" --embedding-features gpu)

# Every option the table gives the command line is a flag of `parley diarize`, with its help.
execute_process(COMMAND "${PARLEY}" options --json RESULT_VARIABLE status OUTPUT_VARIABLE table)
execute_process(COMMAND "${PARLEY}" diarize --help OUTPUT_VARIABLE help)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "parley options --json: exit status ${status}")
endif()
string(REGEX REPLACE "[ \n]+" " " help_words "${help}")
string(JSON count LENGTH "${table}")
math(EXPR last "${count} - 1")
foreach(index RANGE ${last})
  string(JSON flag GET "${table}" ${index} faces cli)
  if(flag STREQUAL "" OR flag STREQUAL "NOTFOUND")
    continue()
  endif()
  string(JSON help_text GET "${table}" ${index} help)
  string(REGEX REPLACE "[ \n]+" " " help_text "${help_text}")
  string(SUBSTRING "${help_text}" 0 30 help_start)
  string(FIND "${help}" "${flag}" at)
  string(FIND "${help_words}" "${help_start}" help_at)
  if(at EQUAL -1 OR help_at EQUAL -1)
    message(FATAL_ERROR "parley diarize --help lacks the table's option ${flag} ('${help_start}...')")
  endif()
endforeach()

# A file named -dash.wav reads as an option; the message says how to name it (not "audio is
# required").
file(WRITE "${WORK_DIR}/-dash.wav" "")
execute_process(COMMAND "${PARLEY}" diarize -dash.wav WORKING_DIRECTORY "${WORK_DIR}"
                RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 2 OR NOT err MATCHES "'-dash.wav' reads as an option.*write ./-dash.wav")
  message(FATAL_ERROR "parley diarize -dash.wav: exit status ${status}, stderr:\n${err}")
endif()

# --help still exits 0.
execute_process(COMMAND "${PARLEY}" diarize --help RESULT_VARIABLE status OUTPUT_QUIET)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "parley diarize --help: exit status ${status}")
endif()

# A user's folder given as the cache: refused, nothing removed.
file(WRITE "${WORK_DIR}/home/Documents/thesis/chapter1.tex" "years of work")
execute_process(COMMAND "${PARLEY}" cache prune --cache-dir "${WORK_DIR}/home"
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 1 OR NOT err MATCHES "not a parley compiled-graph cache"
   OR NOT EXISTS "${WORK_DIR}/home/Documents/thesis/chapter1.tex")
  message(FATAL_ERROR "cache prune on a user folder: exit status ${status}\n${out}\n${err}")
endif()

# A missing --models folder is refused by the engine's model locator, in the words every face
# gives (the C API and Python name models_dir): a failure (1), never a fall-back to
# $PARLEY_MODELS.
execute_process(COMMAND "${PARLEY}" diarize "${CMAKE_CURRENT_LIST_DIR}/../../fuzz/corpus/audio/pcm16.wav"
                        --models "${WORK_DIR}/nonexistent"
                RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 1 OR NOT err MATCHES
   "the models folder '${WORK_DIR}/nonexistent' \\(--models\\) does not exist")
  message(FATAL_ERROR "parley diarize --models nonexistent: exit status ${status}, stderr:\n${err}")
endif()
# recluster applies its flags as diarize does (pipeline::apply_options): the engine's check, in
# flag names, before the folder is read.
execute_process(COMMAND "${PARLEY}" recluster "${WORK_DIR}/nonexistent" --ahc-threshold 0.5
                RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 1 OR NOT err MATCHES "--ahc-threshold: applies to clustering ahc only")
  message(FATAL_ERROR "parley recluster --ahc-threshold (vbx): exit status ${status}, stderr:\n${err}")
endif()
