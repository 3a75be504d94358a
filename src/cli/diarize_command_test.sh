#!/usr/bin/env bash
# CTest: `parley diarize`, `parley recluster` and `parley score` as a user runs them.
#   diarize_command_test.sh PARLEY SOURCE_DIR WORK_DIR ENCODE_AUDIO   (PARLEY_SHARED_DIR: the shared data)
# Skips (exit 77) without the shared folder; fails when a file it needs is missing from it.
set -euo pipefail
parley=$1 source_dir=$2 work=$3 encode_audio=$4
source "$source_dir/src/testing/require_shared.sh"
shared=${PARLEY_SHARED_DIR:?}
rm -rf "$work"; mkdir -p "$work/models"
check() { if ! eval "$1"; then echo "FAILED: $2" >&2; exit 1; fi; }
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/falcon-test/test.wav \
               goldens/pyannote-community1/02_pyannote_sample/raw_embeddings.npz
ln -s "$shared/models/segmentation-3.0-fp16.onnx" "$shared/models/plda" "$work/models/"
/usr/bin/python3 "$source_dir/tools/make_speed_twin.py" --output "$work/models/resnet34-speed-twin.onnx" >/dev/null

# diarize: RTTM on stdout, the speed-twin warning and a summary on stderr.
"$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" \
  --save-intermediates "$work/saved" >"$work/test.rttm" 2>"$work/stderr"
check 'grep -q "speed twin with random weights" "$work/stderr"' "speed-twin warning"
check 'grep -q "real time" "$work/stderr"' "summary line"
# At the default level a plain CPU run logs nothing about providers or routes (its only warning
# here is about the unfolded fp16 model, something to act on).
check '! grep -q "\] \[info\]\|provider choice\|: CPU (" "$work/stderr"' "no provider or route lines at the default level"
check '[ "$(wc -l <"$work/test.rttm")" -gt 0 ]' "some turns"
awk '$1 != "SPEAKER" || $2 != "test" || NF != 10 { bad = 1 } END { exit bad }' "$work/test.rttm" ||
  { echo "FAILED: RTTM lines" >&2; exit 1; }
# The turns it printed are good enough against the people's labels for speech regions.
"$parley" score --ref "$shared/eval/falcon-test/test.rttm" --hyp "$work/test.rttm" --json >"$work/score.json"
check '/usr/bin/python3 -c "import json,sys; t=json.load(open(sys.argv[1]))[\"total\"]; sys.exit(0 if t[\"missed\"]+t[\"false_alarm\"] < 0.25 else 1)" "$work/score.json"' "speech regions"

# --format json carries both diarizations and one 256-number embedding per speaker, keyed by the
# labels the turns use.
"$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" --format json -q \
  --step 2 --out "$work/test.json" 2>/dev/null
check '/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d[\"diarization\"] and \"exclusive_diarization\" in d else 1)" "$work/test.json"' "json output"
check '/usr/bin/python3 -c "
import json, math, sys
d = json.load(open(sys.argv[1]))
e = d[\"speaker_embeddings\"]
labels = sorted({turn[\"speaker\"] for turn in d[\"diarization\"]})
ok = labels and sorted(e) == labels and all(
    len(row) == 256 and all(isinstance(x, float) and math.isfinite(x) for x in row) and
    any(x != 0 for x in row) for row in e.values())
sys.exit(0 if ok else 1)" "$work/test.json"' "json speaker embeddings"

# recluster: the saved arrays give the same turns without the models running again.
"$parley" recluster "$work/saved" --models "$work/models" --uri test -q >"$work/again.rttm"
check 'cmp -s "$work/test.rttm" "$work/again.rttm"' "recluster reproduces diarize"
# Without --uri the recording keeps the id diarize gave it (test.wav: test), whatever the folder.
"$parley" recluster "$work/saved/" --models "$work/models" -q >"$work/slash.rttm"
check 'awk "\$2 != \"test\" { bad = 1 } END { exit bad }" "$work/slash.rttm"' "file id of saved/"
# A folder saved without the id is named after the folder, without a .d and the slash.
cp -r "$work/saved" "$work/older.d"
/usr/bin/python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d.pop("uri"); json.dump(d, open(p, "w"))' "$work/older.d/recording.json"
"$parley" recluster "$work/older.d/" --models "$work/models" -q >"$work/older.rttm"
check 'awk "\$2 != \"older\" { bad = 1 } END { exit bad }" "$work/older.rttm"' "file id of older.d/"

# recluster on pyannote's own intermediates reproduces pyannote's RTTM.
golden="$shared/goldens/pyannote-community1/02_pyannote_sample"
"$parley" recluster "$golden" --plda "$shared/models/plda" --uri "$(awk '{print $2; exit}' "$golden/reference.rttm")" -q >"$work/golden.rttm"
"$parley" score --ref "$golden/reference.rttm" --hyp "$work/golden.rttm" --json >"$work/golden.json"
check '/usr/bin/python3 -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))[\"total\"][\"der\"] <= 0.005 else 1)" "$work/golden.json"' "golden recluster DER"
# ... byte for byte: the same turns, written as pyannote.core's Annotation.write_rttm writes them.
check 'cmp -s "$golden/reference.rttm" "$work/golden.rttm"' "golden recluster RTTM text"
# recluster runs no network, so it takes no --embedding-mode (only diarize, bench and eval do).
set +e
"$parley" recluster "$work/saved" --models "$work/models" --embedding-mode exact -q >/dev/null 2>"$work/err"; status=$?
set -e
check '[ $status -ne 0 ] && grep -q "embedding-mode" "$work/err"' "recluster refuses --embedding-mode"
# (the help goes to a file first: `grep -q` stops reading early, and under pipefail the writer's
# broken pipe would fail the check at random)
"$parley" diarize --help >"$work/help.txt"
check 'grep -q -- "--embedding-mode" "$work/help.txt"' "diarize takes --embedding-mode"
# --embedding-batch (exact mode's chunks per call): a positive number.
set +e
"$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" --embedding-batch 0 -q \
  >/dev/null 2>"$work/err"; status=$?
set -e
check '[ $status -ne 0 ] && grep -q "embedding-batch" "$work/err"' "diarize refuses --embedding-batch 0"


# Speaker-labelled transcripts: an SRT built from the people's turns, given directly or written by
# a "recognizer" command that parley runs while it diarizes.
awk '{n++; s=$4; e=$4+$5; printf "%d\n%02d:%02d:%06.3f --> %02d:%02d:%06.3f\nturn %d\n\n", n, int(s/3600), int(s%3600/60), s%60, int(e/3600), int(e%3600/60), e%60, n}' \
  "$shared/eval/falcon-test/test.rttm" | sed 's/\([0-9]\)\.\([0-9][0-9][0-9]\)/\1,\2/g' >"$work/people.srt"
"$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" -q --step 2 \
  --transcript "$work/people.srt" >"$work/fused.txt" 2>/dev/null
check 'grep -q "^\[00:00:0[0-9]\] SPEAKER_0[0-9]: turn 1" "$work/fused.txt"' "fused text"
"$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" -q --step 2 \
  --asr-cmd "sh -c 'cp \"\$1\" \"\$0.srt\"' {out} '$work/people.srt' {audio}" --format json -o "$work/fused.json" 2>/dev/null
check '/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d[\"transcript\"]; sys.exit(0 if len(s) >= 3 and d[\"diarization\"] and all(x[\"speaker\"].startswith(\"SPEAKER_\") for x in s) else 1)" "$work/fused.json"' "asr-cmd json"
set +e
"$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" -q --step 2 \
  --asr-cmd "sh -c 'exit 3' {audio} {out}" -o "$work/failed.txt" >/dev/null 2>"$work/err"; status=$?
set -e
check '[ $status -eq 1 ] && grep -q "exit status 3" "$work/err" && [ -s "$work/failed.rttm" ]' "failed recognizer keeps the diarization"
set +e
"$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" -q --step 2 \
  --asr-cmd "/nonexistent/whisper-cli -f {audio} -of {out}" -o "$work/missing.txt" >/dev/null 2>"$work/err"; status=$?
set -e
check '[ $status -eq 1 ] && grep -q "not found" "$work/err" && [ ! -e "$work/missing.rttm" ]' "a missing recognizer fails before diarizing"

# Bad input: one line naming the file, exit status 1, nothing on stdout.
set +e
"$parley" diarize "$work/absent.wav" --models "$work/models" >"$work/out" 2>"$work/err"; status=$?
set -e
check '[ $status -eq 1 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "absent.wav" "$work/err" && [ ! -s "$work/out" ]' "missing audio error"
set +e
mkdir -p "$work/empty-models" "$work/empty-home"  # (a --models folder that does not exist is a usage error, cli_usage_errors)
HOME="$work/empty-home" XDG_CACHE_HOME= PARLEY_MODELS= "$parley" diarize "$shared/eval/falcon-test/test.wav" \
  --models "$work/empty-models" >/dev/null 2>"$work/err"; status=$?
set -e
check '[ $status -eq 1 ] && grep -q "models fetch" "$work/err"' "missing models error"

# A damaged MP3 that still decodes (cut to a quarter, 100 bytes of its middle overwritten): the
# warning is parley's own, and -q leaves only the speed-twin notice (loud on purpose) on stderr.
# libmpg123, which libsndfile decodes MP3 with, printed "Note: Illegal Audio-MPEG-Header" itself.
"$encode_audio" "$shared/eval/falcon-test/test.wav" "$work/whole.mp3"
head -c "$(( $(stat -c %s "$work/whole.mp3") / 4 ))" "$work/whole.mp3" >"$work/damaged.mp3"
printf '%100s' '' | dd of="$work/damaged.mp3" bs=1 seek=20000 conv=notrunc status=none
"$parley" audio-info "$work/damaged.mp3" >/dev/null 2>"$work/mp3.err"
check 'grep -q "damaged.mp3: decoded .* s of the .* s its header announces" "$work/mp3.err"' "cut-short MP3 warning"
check '! grep -qi "mpeg-header\|mpg123" "$work/mp3.err"' "no libmpg123 output"
"$parley" diarize "$work/damaged.mp3" --models "$work/models" -q --step 2 >"$work/mp3.rttm" 2>"$work/mp3-quiet.err"
check '[ -z "$(grep -v -e "speed twin with random weights" -e "^!*$" "$work/mp3-quiet.err")" ]' "-q: no warning for a damaged MP3"

# Providers: both models are routed and each decision is logged (at debug level: -v); a named
# provider that this machine cannot use stops the run with its reason before any model loads.
# (Skipped where a GPU provider is installed: there the routing lines say where the models run
# instead.)
if ! "$parley" providers | awk '$1 == "cuda" && $3 == "available" { found = 1 } END { exit !found }'; then
  "$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" --step 2 -v \
    >/dev/null 2>"$work/routing.err"
  check 'grep -q "segmentation-3.0-fp16: CPU" "$work/routing.err" && grep -q "resnet34-speed-twin: CPU" "$work/routing.err"' "one routing line per model"
  # -q prints only errors (and the speed-twin notice, loud on purpose): no routing lines.
  "$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" -q --step 2 \
    >/dev/null 2>"$work/quiet.err"
  check '! grep -q ": CPU" "$work/quiet.err"' "-q hides warnings"
  set +e
  "$parley" diarize "$shared/eval/falcon-test/test.wav" --models "$work/models" -q \
    --segmentation-provider cuda >/dev/null 2>"$work/cuda.err"; status=$?
  set -e
  check '[ $status -eq 1 ] && grep -q "libonnxruntime_providers_cuda" "$work/cuda.err"' "unavailable provider is a clear error"
fi
echo "diarize, recluster and score behave as documented"
