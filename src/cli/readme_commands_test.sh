#!/usr/bin/env bash
# CTest: every `build/parley ...` line in README.md's code blocks works exactly as written, run
# from a scratch folder laid out like the checkout root after scripts/setup: build/parley, the
# models where scripts/prepare-models puts them (beside the executable), an empty home (no
# per-user model cache, no $PARLEY_MODELS), and the README's file names made from real
# recordings in ../shared/eval. A command added to the README is tested without editing this.
#   readme_commands_test.sh PARLEY SOURCE_DIR WORK_DIR ENCODE_AUDIO   (PARLEY_SHARED_DIR: shared data)
# Skips (exit 77) when the shared models or recordings are absent.
set -euo pipefail
parley=$1 source_dir=$2 work=$3 encode_audio=$(realpath "$4")
shared=${PARLEY_SHARED_DIR:?}
eval_dir=$shared/eval
for needed in models/segmentation-3.0-fp16.onnx models/plda eval/pyannote-sample/sample.wav \
              eval/falcon-test/test.wav eval/ami-debug/debug.development.lst; do
  [ -e "$shared/$needed" ] || { echo "skipping: $shared/$needed not found"; exit 77; }
done

# The models as a user has them after setup: in `models` beside the parley executable.
PARLEY_BUILD_DIR=$(dirname "$(realpath "$parley")") PARLEY_SHARED_DIR=$shared \
  "$source_dir/scripts/prepare-models" >/dev/null

rm -rf "$work"
checkout=$work/checkout
mkdir -p "$checkout/build" "$work/home"
ln -s "$(realpath "$parley")" "$checkout/build/parley"
cd "$checkout"
# The README's recordings, from real ones.
"$encode_audio" "$eval_dir/pyannote-sample/sample.wav" meeting.m4a
cp "$eval_dir/falcon-test/test.wav" call.wav
cp "$eval_dir/falcon-test/test.wav" talk.wav
cp "$eval_dir/pyannote-sample/sample.wav" long.wav
sox "$eval_dir/ami-debug/dev00.wav" -b 16 dev00.flac
sox "$eval_dir/ami-debug/tst00.wav" -b 16 tst00.flac
# An evaluation set in pyannote's list format, its audio beside the list.
for part in lst rttm uem; do cp "$eval_dir/ami-debug/debug.development.$part" "set.$part"; done
while read -r uri; do cp "$eval_dir/ami-debug/$uri.wav" .; done <set.lst
# A reference and a hypothesis: the people's turns, and the same turns 0.3 s late.
cp "$eval_dir/pyannote-sample/sample.rttm" ref.rttm
awk '{ $4 = sprintf("%.3f", $4 + 0.3); print }' ref.rttm >hyp.rttm
# A transcript of talk.wav (one cue per reference turn) and its speaker turns.
cp "$eval_dir/falcon-test/test.rttm" talk.rttm
awk '{ n++; s = $4; e = $4 + $5
       printf "%d\n%02d:%02d:%06.3f --> %02d:%02d:%06.3f\nturn %d\n\n", n, int(s / 3600),
              int(s % 3600 / 60), s % 60, int(e / 3600), int(e % 3600 / 60), e % 60, n }' talk.rttm |
  sed 's/\([0-9]\)\.\([0-9][0-9][0-9]\)/\1,\2/g' >talk.srt

# The command lines: inside ``` blocks, starting with build/parley, trailing comment removed.
mapfile -t commands < <(awk '/^```/ { inside = !inside; next }
                             inside && /^build\/parley / { sub(/[ \t]+#.*$/, ""); print }' \
                             "$source_dir/README.md")
if [ ${#commands[@]} -lt 10 ]; then
  echo "FAILED: found only ${#commands[@]} build/parley lines in README.md's code blocks" >&2
  exit 1
fi

failed=0
for index in "${!commands[@]}"; do
  command=${commands[$index]}
  log=$work/command-$index.log
  if env -i PATH="$PATH" HOME="$work/home" LANG=C.UTF-8 bash -c "$command" >"$log" 2>&1; then
    echo "ok      $command"
  else
    echo "FAILED  $command" >&2
    tail -n 20 "$log" | sed 's/^/        /' >&2
    failed=$((failed + 1))
  fi
done
echo "${#commands[@]} README commands, $failed failed"
[ "$failed" -eq 0 ]
