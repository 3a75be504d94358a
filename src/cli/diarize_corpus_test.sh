#!/usr/bin/env bash
# CTest: `parley diarize` over many recordings (the corpus engine) as a user runs it: --out-dir,
# --manifest, failures that stay alone, resuming, --shard, output names that never collide.
#   diarize_corpus_test.sh PARLEY SOURCE_DIR WORK_DIR   (PARLEY_SHARED_DIR: the shared data)
set -euo pipefail
parley=$1 source_dir=$2 work=$3
source "$source_dir/src/testing/require_shared.sh"
shared=${PARLEY_SHARED_DIR:?}
rm -rf "$work"; mkdir -p "$work/models" "$work/audio/other"
check() { if ! eval "$1"; then echo "FAILED: $2" >&2; exit 1; fi; }
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/ami-debug/dev00.wav \
               eval/ami-debug/dev01.wav eval/ami-debug/trn03.wav eval/ami-debug/trn02.wav \
               eval/pyannote-sample/sample.wav
ln -s "$shared/models/segmentation-3.0-fp16.onnx" "$shared/models/plda" "$work/models/"
/usr/bin/python3 "$source_dir/tools/make_speed_twin.py" --output "$work/models/resnet34-speed-twin.onnx" >/dev/null
run() { "$parley" diarize --models "$work/models" --step 2 "$@"; }

a=$work/audio
for name in dev00 dev01 trn03 trn02; do cp "$shared/eval/ami-debug/$name.wav" "$a/"; done
# Same base name in another folder (another recording): both must be kept.
sox "$shared/eval/pyannote-sample/sample.wav" "$a/other/dev00.flac" trim 0 20
echo "not audio" >"$a/broken.wav"
cat >"$work/list.txt" <<EOF
# a comment, then relative paths (from the manifest's folder) and an eval-style TSV line
audio/dev00.wav
audio/dev01.wav
audio/broken.wav
audio/other/dev00.flac	some.rttm
audio/missing.wav
EOF

# One undecodable and one missing recording fail alone; the others are written; exit status 1.
set +e
run "$a/trn03.wav" "$a/trn02.wav" --manifest "$work/list.txt" --out-dir "$work/out" --jobs 2 \
  >"$work/stdout" 2>"$work/err"; status=$?
set -e
check '[ $status -eq 1 ]' "exit status 1 when some recordings fail (got $status)"
check 'grep -q "broken.wav" "$work/err" && grep -q "missing.wav" "$work/err"' "each failure named"
check 'grep -q "2 of 7 recordings failed" "$work/err"' "failure count"
check '[ ! -s "$work/stdout" ]' "nothing on stdout with --out-dir"
check '[ "$(ls "$work/out" | wc -l)" -eq 5 ]' "five results ($(ls "$work/out" | tr '\n' ' '))"
for name in trn03 trn02 dev01; do check "[ -s '$work/out/$name.rttm' ]" "$name.rttm written"; done
# Two recordings called dev00 get two outputs, told apart by their path.
check '[ "$(ls "$work/out" | grep -c "^dev00-[0-9a-f]\{8\}\.rttm$")" -eq 2 ]' "both dev00 kept"

# Each result equals diarizing that recording alone.
run "$a/dev01.wav" -q >"$work/alone.rttm"
check 'cmp -s "$work/alone.rttm" "$work/out/dev01.rttm"' "corpus result equals the recording alone"
# ... also with two engines and one recording decoded at a time.
run "$a/dev01.wav" "$a/trn03.wav" --engines 2 --jobs 1 --out-dir "$work/engines" -q
check 'cmp -s "$work/out/dev01.rttm" "$work/engines/dev01.rttm" && cmp -s "$work/out/trn03.rttm" "$work/engines/trn03.rttm"' "two engines, same results"
# Without --out-dir: RTTM of every recording on stdout, in input order.
run "$a/trn02.wav" "$a/dev01.wav" -q >"$work/both.rttm"
check 'cat "$work/out/trn02.rttm" "$work/out/dev01.rttm" | cmp -s - "$work/both.rttm"' "stdout in input order"
# ... also when a recording that cannot be opened comes first: the others still reach stdout.
set +e
run "$a/missing.wav" "$a/trn02.wav" "$a/dev01.wav" -q >"$work/after-missing.rttm" 2>/dev/null
set -e
check 'cmp -s "$work/both.rttm" "$work/after-missing.rttm"' "stdout after a recording that failed to open"

# --shard K/N: disjoint parts whose union is the whole run, names as in the whole run.
mkdir "$work/shards"
for k in 1 2 3; do
  set +e
  run "$a/trn03.wav" "$a/trn02.wav" --manifest "$work/list.txt" --out-dir "$work/shard$k" \
    --shard "$k/3" -q 2>/dev/null
  set -e
  cp "$work/shard$k"/*.rttm "$work/shards/"
done
check 'diff <(ls "$work/out") <(ls "$work/shards")' "shards together hold the whole run"
check '[ -z "$(ls "$work"/shard[123] | grep rttm | sort | uniq -d)" ]' "no recording in two shards"
for file in "$work"/shards/*.rttm; do
  check "cmp -s '$file' '$work/out/$(basename "$file")'" "shard output $(basename "$file") equals the whole run's"
done

# A rerun skips what was finished with the same settings and touches none of it.
touch -d '2001-01-01' "$work/out/trn03.rttm"
set +e
run "$a/trn03.wav" "$a/trn02.wav" --manifest "$work/list.txt" --out-dir "$work/out" >/dev/null 2>"$work/err"
set -e
check 'grep -q "5 of 7 recordings were finished by an earlier run" "$work/err"' "rerun skips five"
check '[ "$(date -r "$work/out/trn03.rttm" +%Y)" = 2001 ]' "skipped output untouched"
# A damaged output is made again; a changed setting makes every one again.
: >"$work/out/trn02.rttm"
run "$a/trn03.wav" "$a/trn02.wav" --out-dir "$work/out" 2>"$work/err"
check 'grep -q "1 of 2 recordings were finished by an earlier run" "$work/err" && [ -s "$work/out/trn02.rttm" ]' "damaged output redone"
# The thread count (and with it the automatic segmentation batch) does not change the output.
run "$a/trn03.wav" "$a/trn02.wav" --out-dir "$work/out" --threads 3 2>"$work/err"
check 'grep -q "2 of 2 recordings were finished by an earlier run" "$work/err"' "another thread count skips"
run "$a/trn03.wav" "$a/trn02.wav" --out-dir "$work/out" --clustering ahc 2>"$work/err"
check '! grep -q "finished by an earlier run" "$work/err"' "changed settings redo everything"

# One recording with --out-dir is written as a corpus run writes it, with its record: a --manifest
# run over the same folder skips it, and the other way round.
echo "$a/trn03.wav" >"$work/one.txt"
run "$a/trn03.wav" --out-dir "$work/single" -q
check '[ -s "$work/single/.parley/trn03.rttm.json" ]' "one recording with --out-dir writes its record"
run --manifest "$work/one.txt" --out-dir "$work/single" 2>"$work/err"
check 'grep -q "nothing diarized: 1 of 1 recordings done earlier" "$work/err"' "a --manifest run skips a single --out-dir run's output"
run --manifest "$work/one.txt" --out-dir "$work/manifest-first" -q
run "$a/trn03.wav" --out-dir "$work/manifest-first" 2>"$work/err"
check 'grep -q "nothing diarized: 1 of 1 recordings done earlier" "$work/err"' "a single --out-dir run skips a --manifest run's output"
# Saving the intermediates diarizes the one recording on its own path; its output gets its record
# all the same, and is what the corpus writes.
run "$a/dev01.wav" --out-dir "$work/saved-out" --save-intermediates "$work/saved-npz" -q
check '[ -s "$work/saved-out/.parley/dev01.rttm.json" ] && cmp -s "$work/saved-out/dev01.rttm" "$work/engines/dev01.rttm"' "--save-intermediates --out-dir writes the corpus output and its record"
run --manifest <(echo "$a/dev01.wav") --out-dir "$work/saved-out" 2>"$work/err"
check 'grep -q "nothing diarized: 1 of 1 recordings done earlier" "$work/err"' "a --manifest run skips a --save-intermediates run's output"

# Destinations and numbers are checked before any model loads.
: >"$work/a-file"
set +e
run "$a/trn03.wav" "$a/trn02.wav" --out-dir "$work/a-file" -q 2>"$work/err"; status=$?
set -e
check '[ $status -ne 0 ] && grep -q "not a folder" "$work/err"' "--out-dir on a file refused"
set +e
run "$a/trn03.wav" "$a/trn02.wav" --jobs 0 -q 2>"$work/err"; status=$?
set -e
check '[ $status -ne 0 ] && grep -q -- "--jobs" "$work/err"' "--jobs 0 refused"
set +e
run "$a/trn03.wav" --shard 3/2 -q 2>"$work/err"; status=$?
set -e
check '[ $status -ne 0 ] && grep -q "3/2" "$work/err"' "bad --shard refused"
if ! "$parley" providers | awk '$1 == "cuda" && $3 == "available" { found = 1 } END { exit !found }'; then
  set +e
  run "$a/trn03.wav" "$a/trn02.wav" --devices 0,1 -q 2>"$work/err"; status=$?
  set -e
  check '[ $status -ne 0 ] && grep -q "needs a GPU provider" "$work/err"' "--devices on the CPU refused"
fi
# A transcript or saved intermediates belong to one recording.
set +e
run "$a/trn03.wav" "$a/trn02.wav" --save-intermediates "$work/saved" -q 2>"$work/err"; status=$?
set -e
check '[ $status -eq 1 ] && grep -q "one recording at a time" "$work/err" && [ ! -e "$work/saved" ]' "--save-intermediates with two recordings refused"
echo "diarize corpus: all checks passed"
