# CTest script: `parley fuse` end to end on small files it writes itself: a transcript in each
# input format fused with an RTTM, each output format, and bad input reported as one line with
# the file and line number, exit status 1.
# Inputs: -DPARLEY=<parley executable> -DWORK_DIR=<scratch folder>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

file(WRITE "${WORK_DIR}/talk.rttm"
  "SPEAKER talk 1 0.000 2.000 <NA> <NA> alice <NA> <NA>\n"
  "SPEAKER talk 1 2.000 3.000 <NA> <NA> bob <NA> <NA>\n")
file(WRITE "${WORK_DIR}/two.rttm"
  "SPEAKER talk 1 0.000 2.000 <NA> <NA> alice <NA> <NA>\n"
  "SPEAKER other 1 0.000 2.000 <NA> <NA> carol <NA> <NA>\n")
file(WRITE "${WORK_DIR}/talk.srt"
  "1\n00:00:00,100 --> 00:00:01,800\nHello Bob.\n\n2\n00:00:02,200 --> 00:00:04,000\nHi Alice.\n")
file(WRITE "${WORK_DIR}/talk.json"
  "{\"segments\": [{\"start\": 0.1, \"end\": 4.0, \"text\": \" Hello Bob. Hi Alice.\", \"words\": [
  {\"word\": \" Hello\", \"start\": 0.1, \"end\": 0.6}, {\"word\": \" Bob.\", \"start\": 0.7, \"end\": 1.8},
  {\"word\": \" Hi\", \"start\": 2.2, \"end\": 2.6}, {\"word\": \" Alice.\", \"start\": 2.7, \"end\": 4.0}]}]}\n")
file(WRITE "${WORK_DIR}/talk.ctm"
  "talk 1 0.10 0.50 Hello\ntalk 1 0.70 1.10 Bob.\ntalk 1 2.20 0.40 Hi\ntalk 1 2.70 1.30 Alice.\n")

function(expect_output expected)
  execute_process(COMMAND "${PARLEY}" fuse ${ARGN}
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "fuse ${ARGN}: exit status ${status}\nstderr: ${err}")
  endif()
  if(NOT out STREQUAL expected)
    message(FATAL_ERROR "fuse ${ARGN}: stdout\n'${out}'\nexpected\n'${expected}'")
  endif()
endfunction()

function(expect_error expected)
  execute_process(COMMAND "${PARLEY}" fuse ${ARGN}
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 1)
    message(FATAL_ERROR "fuse ${ARGN}: exit status ${status}, expected 1\nstderr: ${err}")
  endif()
  if(NOT err STREQUAL "parley: error: ${expected}\n")
    message(FATAL_ERROR "fuse ${ARGN}: stderr\n'${err}'\nexpected\n'parley: error: ${expected}'")
  endif()
endfunction()

set(text "[00:00:00] alice: Hello Bob.\n[00:00:02] bob: Hi Alice.\n")
expect_output("${text}" --transcript "${WORK_DIR}/talk.srt" --rttm "${WORK_DIR}/talk.rttm")
# Word times split the one JSON segment at the speaker change.
expect_output("${text}" --transcript "${WORK_DIR}/talk.json" --rttm "${WORK_DIR}/talk.rttm")
expect_output("${text}" --transcript "${WORK_DIR}/talk.ctm" --rttm "${WORK_DIR}/talk.rttm"
              --format txt)
expect_output("1\n00:00:00,100 --> 00:00:01,800\nalice: Hello Bob.\n\n2\n00:00:02,200 --> 00:00:04,000\nbob: Hi Alice.\n\n"
              --transcript "${WORK_DIR}/talk.json" --rttm "${WORK_DIR}/talk.rttm" --format srt)
expect_output("WEBVTT\n\n00:00:00.100 --> 00:00:01.800\nalice: Hello Bob.\n\n00:00:02.200 --> 00:00:04.000\nbob: Hi Alice.\n\n"
              --transcript "${WORK_DIR}/talk.srt" --rttm "${WORK_DIR}/talk.rttm" --format vtt)
# --file-id picks one recording of several.
# Consecutive segments of one speaker make one line.
expect_output("[00:00:00] carol: Hello Bob. Hi Alice.\n"
              --transcript "${WORK_DIR}/talk.srt" --rttm "${WORK_DIR}/two.rttm" --file-id other
              --gap-tolerance 5)

# JSON to a file, format from its extension.
execute_process(COMMAND "${PARLEY}" fuse --transcript "${WORK_DIR}/talk.json"
                        --rttm "${WORK_DIR}/talk.rttm" --out "${WORK_DIR}/fused.json"
                RESULT_VARIABLE status)
file(READ "${WORK_DIR}/fused.json" fused)
string(JSON second_speaker GET "${fused}" segments 1 speaker)
string(JSON word_speaker GET "${fused}" segments 1 words 1 speaker)
string(JSON word_text GET "${fused}" segments 1 words 1 word)
if(NOT status EQUAL 0 OR NOT second_speaker STREQUAL "bob" OR NOT word_speaker STREQUAL "bob"
   OR NOT word_text STREQUAL "Alice.")
  message(FATAL_ERROR "fuse --out fused.json wrote:\n${fused}")
endif()

# Bad input: one line naming the file and line, exit status 1.
file(WRITE "${WORK_DIR}/bad.srt" "1\n00:00:00,100 --> 00:00:01,800\nHello\n\n2\n00:00:02 -> 00:00:04\nHi\n")
expect_error("${WORK_DIR}/bad.srt:5: cue 2 has no timing line '00:00:01,000 --> 00:00:02,500' after its number"
             --transcript "${WORK_DIR}/bad.srt" --rttm "${WORK_DIR}/talk.rttm")
file(WRITE "${WORK_DIR}/cut.json" "{\"segments\": [\n  {\"start\": 0.1,\n")
expect_error("${WORK_DIR}/cut.json:3: not valid JSON (syntax error while parsing object key - unexpected end of input; expected string literal); is the file complete?"
             --transcript "${WORK_DIR}/cut.json" --rttm "${WORK_DIR}/talk.rttm")
expect_error("${WORK_DIR}/two.rttm: holds turns of 2 recordings (other, talk); pass --file-id to say which one the transcript belongs to"
             --transcript "${WORK_DIR}/talk.srt" --rttm "${WORK_DIR}/two.rttm")
# A named format is read as that format (the option table's transcript_format): an SRT read as
# CTM fails on its first line.
execute_process(COMMAND "${PARLEY}" fuse --transcript "${WORK_DIR}/talk.srt"
                        --rttm "${WORK_DIR}/talk.rttm" --transcript-format ctm
                RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 1 OR NOT err MATCHES "talk.srt:1")
  message(FATAL_ERROR "fuse --transcript-format ctm of an SRT: exit status ${status}\nstderr: ${err}")
endif()

# Outputs are whole or absent: a full standard output fails, and a write that fails half way
# (a file-size limit, as a full disk) keeps the old file and leaves no partial file.
execute_process(COMMAND "${PARLEY}" fuse --transcript "${WORK_DIR}/talk.srt" --rttm "${WORK_DIR}/talk.rttm"
                OUTPUT_FILE /dev/full RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 1 OR NOT err MATCHES "standard output")
  message(FATAL_ERROR "fuse > /dev/full: exit status ${status}, expected 1\nstderr: ${err}")
endif()
file(MAKE_DIRECTORY "${WORK_DIR}/atomic")
file(WRITE "${WORK_DIR}/atomic/t.srt" "1\n00:00:00,000 --> 00:00:01,000\nold cue\n")
execute_process(COMMAND sh -c "trap '' XFSZ; ulimit -f 0; exec \"$0\" \"$@\"" "${PARLEY}" fuse
                        --transcript "${WORK_DIR}/talk.srt" --rttm "${WORK_DIR}/talk.rttm"
                        --format srt --out "${WORK_DIR}/atomic/t.srt"
                RESULT_VARIABLE status ERROR_VARIABLE err)
file(READ "${WORK_DIR}/atomic/t.srt" kept)
file(GLOB left RELATIVE "${WORK_DIR}/atomic" "${WORK_DIR}/atomic/*" "${WORK_DIR}/atomic/.*")
if(NOT status EQUAL 1 OR NOT err MATCHES "t.srt" OR NOT kept STREQUAL "1\n00:00:00,000 --> 00:00:01,000\nold cue\n"
   OR NOT left STREQUAL "t.srt")
  message(FATAL_ERROR "fuse --out on a full disk: status ${status}, files '${left}', t.srt '${kept}'\nstderr: ${err}")
endif()
file(WRITE "${WORK_DIR}/not-a-folder" "")
execute_process(COMMAND "${PARLEY}" fuse --transcript "${WORK_DIR}/talk.srt" --rttm "${WORK_DIR}/talk.rttm"
                        --out "${WORK_DIR}/not-a-folder/t.txt"
                RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 1 OR NOT err MATCHES "not-a-folder/t.txt")
  message(FATAL_ERROR "fuse --out under a file: status ${status}\nstderr: ${err}")
endif()
