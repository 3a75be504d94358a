#!/usr/bin/env bash
# CTest: a corpus run of `parley diarize` on hostile lists and names (short clips, so it is
# quick): a NUL in a manifest line, a file name that is not UTF-8, names that clash only after
# hashing, a 255-byte name, a file listed twice, manifests from pipes and standard input, a file
# named -dash.wav after --, outputs of two formats in one folder, readable records, a rerun with
# nothing to do, warnings that name their recording, and option values the machine cannot hold.
#   diarize_corpus_names_test.sh PARLEY SOURCE_DIR WORK_DIR   (PARLEY_SHARED_DIR: the shared data)
set -euo pipefail
parley=$1 source_dir=$2 work=$3
source "$source_dir/src/testing/require_shared.sh"
shared=${PARLEY_SHARED_DIR:?}
rm -rf "$work"; mkdir -p "$work/models" "$work/audio/sub"
check() { if ! eval "$1"; then echo "FAILED: $2" >&2; exit 1; fi; }
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/pyannote-sample/sample.wav
ln -s "$shared/models/segmentation-3.0-fp16.onnx" "$shared/models/plda" "$work/models/"
/usr/bin/python3 "$source_dir/tools/make_speed_twin.py" --output "$work/models/resnet34-speed-twin.onnx" >/dev/null
run() { "$parley" diarize --models "$work/models" --step 2 "$@"; }
# Exit status of a command that may fail, without stopping the script.
status_of() { set +e; "$@"; local s=$?; set -e; return $s; }

a=$work/audio
sox "$shared/eval/pyannote-sample/sample.wav" "$a/clip.wav" trim 0 12
sox "$shared/eval/pyannote-sample/sample.wav" "$a/clip2.wav" trim 12 12

# A NUL in a manifest line: that recording fails alone, nothing is written under a cut name.
printf 'clip.wav\0evil.wav\nclip2.wav\n' >"$a/nul.txt"
set +e; run --manifest "$a/nul.txt" --out-dir "$work/nul" 2>"$work/err"; status=$?; set -e
check '[ $status -eq 1 ] && grep -q "cannot hold a NUL byte" "$work/err"' "NUL line refused ($status: $(cat "$work/err"))"
check '[ "$(ls "$work/nul")" = clip2.rttm ]' "only the other recording written ($(ls "$work/nul" | tr '\n' ' '))"
check '! grep -rq evil "$work/nul"' "no file id with the NUL's tail"

# A file name that is not UTF-8: written, with a valid record.
latin1=$(printf 'caf\xe9')
cp "$a/clip.wav" "$a/$latin1.wav"
run "$a/$latin1.wav" "$a/clip2.wav" --out-dir "$work/latin1" -q
check '[ -s "$work/latin1/$latin1.rttm" ] && [ -s "$work/latin1/clip2.rttm" ]' "both written"
check '/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r[\"audio\"].endswith(\"caf\\\\xE9.wav\"), r[\"audio\"]" "$work/latin1/.parley/$latin1.rttm.json"' "record is JSON and shows the byte"
# Readable times in records; a changed file is still told apart.
check 'grep -Eq "\"audio_modified\": \"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z\"" "$work/latin1/.parley/clip2.rttm.json"' "audio_modified is ISO 8601 UTC"
touch -d '2020-02-02 02:02:02 UTC' "$a/clip2.wav"
run "$a/$latin1.wav" "$a/clip2.wav" --out-dir "$work/latin1" 2>"$work/err"
check 'grep -q "1 of 2 recordings were finished by an earlier run" "$work/err"' "a touched file is made again"
check 'grep -q "\"audio_modified\": \"2020-02-02T02:02:02.000000000Z\"" "$work/latin1/.parley/clip2.rttm.json"' "its time in the record"

# x.wav and sub/x.wav take hashed names; a file already called like one of those is no repeat.
cp "$a/clip.wav" "$a/x.wav"; cp "$a/clip2.wav" "$a/sub/x.wav"
hashed=$(/usr/bin/python3 -c 'import hashlib,os,sys; print("x-" + hashlib.sha256(os.path.abspath(sys.argv[1]).encode()).hexdigest()[:8])' "$a/sub/x.wav")
cp "$a/clip.wav" "$a/$hashed.wav"
run "$a/x.wav" "$a/sub/x.wav" "$a/$hashed.wav" --out-dir "$work/clash" 2>"$work/err"
check '! grep -q "listed twice" "$work/err" && [ "$(ls "$work/clash" | wc -l)" -eq 3 ]' "three files, three outputs ($(ls "$work/clash" | tr '\n' ' '))"

# A 255-byte file name gets a shorter output name; the others go on.
long=$(printf 'y%.0s' $(seq 251))
cp "$a/clip.wav" "$a/$long.wav"
run "$a/$long.wav" "$a/clip2.wav" --out-dir "$work/long" -q
check '[ "$(ls "$work/long" | grep -c "^y\{151\}-[0-9a-f]\{8\}\.rttm$")" -eq 1 ] && [ -s "$work/long/clip2.rttm" ]' "long name cut ($(ls "$work/long" | tr '\n' ' '))"

# A result that cannot be written fails that recording alone.
mkdir -p "$work/blocked/.parley/clip.rttm.json"
set +e; run "$a/clip.wav" "$a/clip2.wav" --out-dir "$work/blocked" 2>"$work/err"; status=$?; set -e
check '[ $status -eq 1 ] && grep -q "1 of 2 recordings failed" "$work/err" && [ -s "$work/blocked/clip2.rttm" ]' "write failure alone ($(cat "$work/err"))"

# A file listed twice, however spelled: diarized once, with a warning; the run goes on.
run "$a/clip.wav" "$a/./clip.wav" --manifest <(printf '%s\n' "$a/sub/../clip.wav") --out-dir "$work/twice" 2>"$work/err"
check 'grep -q "listed twice" "$work/err" && [ "$(ls "$work/twice")" = clip.rttm ]' "repeat diarized once"

# Manifests from a pipe and from standard input; their relative paths start at the current folder.
(cd "$a" && run --manifest <(printf 'clip.wav\n') --out-dir "$work/pipe" -q)
check '[ -s "$work/pipe/clip.rttm" ]' "manifest from a pipe"
(cd "$a" && printf 'clip2.wav\n' | run --manifest - --out-dir "$work/stdin" -q)
check '[ -s "$work/stdin/clip2.rttm" ]' "manifest from standard input"

# -- before a file whose name starts with '-'.
cp "$a/clip.wav" "$a/-dash.wav"
(cd "$a" && run --out-dir "$work/dash" -q clip2.wav -- -dash.wav)
check '[ -s "$work/dash/-dash.rttm" ] && [ -s "$work/dash/clip2.rttm" ]' "-- works"

# Two formats in one folder: each kept and recognised by its rerun; a rerun with nothing to do
# says so instead of a speed.
run "$a/clip.wav" --out-dir "$work/formats" --format rttm 2>/dev/null
run "$a/clip.wav" --out-dir "$work/formats" --format json 2>"$work/err"
check '! grep -q "finished by an earlier run" "$work/err"' "json made after rttm"
for format in rttm json; do
  run "$a/clip.wav" --out-dir "$work/formats" --format $format 2>"$work/err"
  check 'grep -q "1 of 1 recordings were finished by an earlier run" "$work/err"' "$format recognised after the other"
  check 'grep -q "nothing diarized" "$work/err" && ! grep -q "real time" "$work/err"' "no speed when nothing ran"
done
check '[ -s "$work/formats/.parley/clip.rttm.json" ] && [ -s "$work/formats/.parley/clip.json.json" ]' "a record per format"

# Warnings from the pipeline name their recording (9 speakers cannot be found in 12 s).
run "$a/clip2.wav" "$a/clip.wav" --num-speakers 9 --out-dir "$work/warn" 2>"$work/err"
check 'grep -q "clip.wav: clustering: 9 speakers requested" "$work/err" && grep -q "clip2.wav: clustering: 9 speakers requested" "$work/err"' "warnings name the recording ($(cat "$work/err"))"
check '! grep "clustering:" "$work/err" | grep -vq "\.wav: clustering:"' "every clustering warning names one"

# Option values are bounded, with the reason, before any model loads.
expect_refused() {
  local pattern=$1; shift
  set +e; run "$a/clip.wav" "$a/clip2.wav" "$@" 2>"$work/err"; local status=$?; set -e
  check '[ $status -eq 1 ] && grep -q -- "$pattern" "$work/err"' "$* refused with '$pattern' ($status: $(cat "$work/err"))"
}
expect_refused "--segmentation-batch must be at most 1024 (got 20000)" --segmentation-batch 20000
expect_refused "--segmentation-batch must be at most 1024 (got 4294967296)" --segmentation-batch 4294967296
expect_refused "--embedding-batch must be at most 1024 (got 18446744073709551615)" --embedding-batch 18446744073709551615
expect_refused "--segmentation-sessions must be at most 16" --segmentation-sessions 1000
expect_refused "--engines must be at most .* on the CPU (got 64)" --engines 64
memory=$(( $(getconf _PHYS_PAGES) * $(getconf PAGESIZE) ))
# --segmentation-batch 1000 at 2 threads: 2 workers of 1000 chunks of about 18 MiB.
if [ $(( 2 * 1000 * 18 * 1048576 )) -gt "$memory" ]; then
  expect_refused "more than this machine's" --segmentation-batch 1000 --threads 2
fi
# --jobs 256: 256 recordings of up to half an hour (110 MiB of samples) decoded at once.
if [ $(( 256 * 110 * 1048576 )) -gt "$memory" ]; then
  expect_refused "--jobs 256: each recording being decoded holds up to" --jobs 256
fi
echo "diarize corpus names: all checks passed"
