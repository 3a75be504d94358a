#!/usr/bin/env bash
# CTest: `parley stream` as a user runs it (docs/live.md).
#   stream_command_test.sh PARLEY SOURCE_DIR WORK_DIR   (PARLEY_SHARED_DIR: the shared data)
# Usage errors first (no models needed); then, with the shared folder, a recording streamed with
# --final-recluster, whose RTTM must be `parley diarize`'s turn for turn under the live names.
set -euo pipefail
parley=$1 source_dir=$2 work=$3
rm -rf "$work"; mkdir -p "$work/models"
check() { if ! eval "$1"; then echo "FAILED: $2" >&2; exit 1; fi; }

# Standard input is raw PCM only; --format takes sample or output formats; bounds in the flags.
status=0; "$parley" stream - </dev/null 2>"$work/err" || status=$?
check '[ "$status" -ne 0 ] && grep -q -- "--raw" "$work/err"' "stdin without --raw"
status=0; "$parley" stream - --raw --format mp3 </dev/null 2>"$work/err" || status=$?
check '[ "$status" -ne 0 ] && grep -q "s16le or f32le" "$work/err"' "unknown --format"
status=0; "$parley" stream x.wav --latency 9 2>"$work/err" || status=$?
check '[ "$status" -eq 2 ] && grep -q -- "--latency" "$work/err"' "--latency out of range"
status=0; "$parley" stream x.wav --stream-embedding fast 2>"$work/err" || status=$?
check '[ "$status" -eq 2 ] && grep -q -- "--stream-embedding" "$work/err"' "unknown --stream-embedding"

source "$source_dir/src/testing/require_shared.sh"
shared=${PARLEY_SHARED_DIR:?}
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/falcon-test/test.wav
ln -s "$shared/models/segmentation-3.0-fp16.onnx" "$shared/models/plda" "$work/models/"
/usr/bin/python3 "$source_dir/tools/make_speed_twin.py" --output "$work/models/resnet34-speed-twin.onnx" >/dev/null
recording=$shared/eval/falcon-test/test.wav

"$parley" stream "$recording" --models "$work/models" --threads 2 --step 2 --final-recluster \
  -o "$work/stream.rttm" >"$work/events.jsonl" 2>"$work/stderr"
check '[ -s "$work/events.jsonl" ]' "events on standard output"
check '/usr/bin/python3 -c "
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert e[\"type\"] in (\"turn_start\", \"turn_end\") and e[\"speaker\"].startswith(\"SPEAKER_\")
" "$work/events.jsonl"' "events are JSON lines of final turns"
check 'grep -q "speakers" "$work/stderr"' "summary on standard error"
# The trunk kept between steps by default (shared embedding mode, a step of whole 10 ms); at a
# step off the fbank grid, rolling says why it cannot run.
"$parley" stream "$recording" --models "$work/models" --threads 2 --step 2 -v \
  >/dev/null 2>"$work/verbose"
check 'grep -q "stream embedding: rolling" "$work/verbose"' "rolling by default"
status=0; "$parley" stream "$recording" --models "$work/models" --step 0.3333 --latency 1 \
  --stream-embedding rolling >/dev/null 2>"$work/err" || status=$?
check '[ "$status" -ne 0 ] && grep -q "10 ms" "$work/err"' "rolling refused off the fbank grid"
"$parley" diarize "$recording" --models "$work/models" --threads 2 --quiet >"$work/diarize.rttm"
# Same turns (columns 4 and 5), and each batch speaker under one live name throughout.
check '[ "$(cut -d" " -f4,5 "$work/stream.rttm")" = "$(cut -d" " -f4,5 "$work/diarize.rttm")" ]' \
  "final-recluster turns equal diarize's"
check '[ "$(paste -d" " <(cut -d" " -f8 "$work/diarize.rttm") <(cut -d" " -f8 "$work/stream.rttm") | sort -u | cut -d" " -f1 | uniq -d)" = "" ]' \
  "one live name per batch speaker"
echo "stream_command_test: ok"
