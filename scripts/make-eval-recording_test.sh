#!/usr/bin/env bash
# scripts/make-eval-recording: the requested length, and the same bytes on every run (benchmarks
# compare runs made from recordings made at different times).
set -euo pipefail
script=$(cd "$(dirname "$0")" && pwd)/make-eval-recording
work=$(mktemp -d "${TMPDIR:-/tmp}/make-eval-recording-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/eval/a"
# 44.1 kHz stereo sources: converting them is where sox would dither.
sox -n -r 44100 -c 2 -b 16 "$work/eval/a/one.wav" synth 3 sine 440 vol 0.3
sox -n -r 44100 -c 2 -b 16 "$work/eval/two.wav" synth 2 sine 300 vol 0.2
PARLEY_EVAL_DIR="$work/eval" "$script" 12 "$work/first.wav"
PARLEY_EVAL_DIR="$work/eval" "$script" 12 "$work/second.wav"
cmp "$work/first.wav" "$work/second.wav" || { echo "FAIL: two runs differ" >&2; exit 1; }
[ "$(soxi -r "$work/first.wav")" = 16000 ] && [ "$(soxi -c "$work/first.wav")" = 1 ] ||
  { echo "FAIL: not 16 kHz mono" >&2; exit 1; }
seconds=$(soxi -D "$work/first.wav")
python3 -c "import sys; sys.exit(0 if abs($seconds - 12) < 1e-3 else 1)" ||
  { echo "FAIL: $seconds s, not 12" >&2; exit 1; }
echo "make-eval-recording: 12 s of 16 kHz mono, the same bytes twice"
