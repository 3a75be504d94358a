#!/usr/bin/env bash
# CTest: `stream_bench --streams`, N streams in one process on one set of models at real-time
# pace, on the CPU with the real segmentation model and the tiny test embedding network: it runs,
# reports every stream, and each stream's events equal the same stream's run alone (streams that
# share the models keep their own state). Timings are not checked (a loaded machine).
#   stream_bench_test.sh STREAM_BENCH WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR)
set -euo pipefail
bench=$1 write_model=$2 work=$3
shared=${PARLEY_SHARED_DIR:-}
recording=$shared/eval/pyannote-sample/sample.wav
if [ ! -f "$recording" ]; then
  echo "skipping: $recording not found (set PARLEY_SHARED_DIR)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work/models"
ln -s "$shared/models/segmentation-3.0-fp16.onnx" "$shared/models/plda" "$work/models/"
"$write_model" "$work/tiny-embedding.onnx" >/dev/null
# Three streams of 10 s starting 6, 12 and 18 s into the recording (each with speech); the rolling
# trunk keeps state per stream, so a stream that read another's would differ from its run alone.
"$bench" "$recording" --models "$work/models" --embedding-model "$work/tiny-embedding.onnx" \
  --threads 1 --streams 1 3 --seconds 10 --stream-offset 6 --first-stream 1 --latencies 2 \
  --stream-embedding rolling --check-streams --compare-alone 3 | tee "$work/out.txt"
grep -q '^embedding rolling$' "$work/out.txt"
for n in 1 2 3; do grep -q "^stream $n of 3: [1-9][0-9]* final events" "$work/out.txt"; done
grep -q '^streams 3 in one process .* events identical to the stream alone: 3 of 3 compared' \
  "$work/out.txt"
grep -q '^streams 1 in one process .* identical to the stream alone: 1 of 1 compared' "$work/out.txt"
echo "stream_bench --streams: every stream as alone"
