#!/usr/bin/env bash
# CTest: every command of README.md's `sh` code blocks (but scripts/setup and scripts/test) works
# exactly as written, in order, run from a scratch folder laid out like the checkout root after
# scripts/setup: `build` is this build tree (build/parley, the wheel in build/python, the models
# where scripts/prepare-models puts them), `examples` the source's; an empty home (no per-user
# model cache, no $PARLEY_MODELS, nothing in ~/.local); and the README's file names made from real
# recordings in ../shared/eval. `python3` in PATH is an interpreter without numpy or Dask (as a
# pyenv one may be), so no line may depend on it. A command added to the README is tested
# without editing this.
#   readme_commands_test.sh PARLEY SOURCE_DIR WORK_DIR ENCODE_AUDIO   (PARLEY_SHARED_DIR: shared data)
# Skips (exit 77) when the shared models or recordings are absent.
set -euo pipefail
parley=$1 source_dir=$2 work=$3 encode_audio=$(realpath "$4")
build_dir=$(dirname "$(realpath "$parley")")
shared=${PARLEY_SHARED_DIR:?}
eval_dir=$shared/eval
for needed in models/segmentation-3.0-fp16.onnx models/plda eval/pyannote-sample/sample.wav \
              eval/falcon-test/test.wav eval/ami-debug/debug.development.lst; do
  [ -e "$shared/$needed" ] || { echo "skipping: $shared/$needed not found"; exit 77; }
done

# The models as a user has them after setup: in `models` beside the parley executable.
PARLEY_BUILD_DIR=$build_dir PARLEY_SHARED_DIR=$shared "$source_dir/scripts/prepare-models" >/dev/null

rm -rf "$work"
checkout=$work/checkout
mkdir -p "$checkout" "$work/home"
ln -s "$build_dir" "$checkout/build"
ln -s "$(realpath "$source_dir/examples")" "$checkout/examples"
# A python3 first in PATH that is not Debian's: it has neither numpy nor Dask.
/usr/bin/python3 -m venv --without-pip "$work/other-python"
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
# A manifest for parley.distributed.
printf 'call.wav\nlong.wav\n' >files.tsv
# A reference and a hypothesis: the people's turns, and the same turns 0.3 s late.
cp "$eval_dir/pyannote-sample/sample.rttm" ref.rttm
awk '{ $4 = sprintf("%.3f", $4 + 0.3); print }' ref.rttm >hyp.rttm
# A transcript of talk.wav (one cue per reference turn) and its speaker turns.
cp "$eval_dir/falcon-test/test.rttm" talk.rttm
awk '{ n++; s = $4; e = $4 + $5
       printf "%d\n%02d:%02d:%06.3f --> %02d:%02d:%06.3f\nturn %d\n\n", n, int(s / 3600),
              int(s % 3600 / 60), s % 60, int(e / 3600), int(e % 3600 / 60), e % 60, n }' talk.rttm |
  sed 's/\([0-9]\)\.\([0-9][0-9][0-9]\)/\1,\2/g' >talk.srt

# The command lines: inside ```sh blocks, but the two at the top, trailing comment removed.
mapfile -t commands < <(awk '/^```sh/ { inside = 1; next }  /^```/ { inside = 0; next }
                             inside && NF && $1 != "scripts/setup" && $1 != "scripts/test" {
                               sub(/[ \t]+#.*$/, ""); print }' "$source_dir/README.md")
count() { printf '%s\n' "${commands[@]}" | grep -c "$1" || true; }
if [ "$(count '^build/parley ')" -lt 10 ] || [ "$(count '^venv/bin/python ')" -lt 1 ] ||
   [ "$(count '^cmake --install build')" -lt 1 ]; then
  echo "FAILED: README.md's sh blocks lack the build/parley, Python or C lines:" >&2
  printf '  %s\n' "${commands[@]}" >&2
  exit 1
fi

failed=0
for index in "${!commands[@]}"; do
  command=${commands[$index]}
  log=$work/command-$index.log
  if env -i PATH="$work/other-python/bin:$PATH" HOME="$work/home" LANG=C.UTF-8 \
    bash -c "$command" >"$log" 2>&1; then
    echo "ok      $command"
  else
    echo "FAILED  $command" >&2
    tail -n 20 "$log" | sed 's/^/        /' >&2
    failed=$((failed + 1))
  fi
done
echo "${#commands[@]} README commands, $failed failed"
[ "$failed" -eq 0 ]
