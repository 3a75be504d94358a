#!/usr/bin/env bash
# CTest: the embedding gate (bench/embedding_gate.cpp) on the CPU with the candidate forced onto
# an accelerator's default path (shared trunk pooled and featurized in the graph) against the
# CPU's host pooling, on the eval recording of bench/gpu/README.md (every WAV of ../shared/eval
# joined, 533 s, as bench/gpu/bundle makes eval.flac) at a 1 s step. The graph's passes all have
# one length, so the last one runs past the recording's end; the graph masks those frames, so every
# pair must pass (cosine >= 0.999), the last chunk's included. About 2.5 minutes of CPU.
#   embedding_gate_eval_test.sh EMBEDDING_GATE SOURCE_DIR WORK_DIR   (PARLEY_SHARED_DIR)
set -euo pipefail
gate=$1 source_dir=$2 work=$3
source "$source_dir/src/testing/require_shared.sh"
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/falcon-test/test.wav
shared=$PARLEY_SHARED_DIR
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAILED: $1" >&2; exit 1; }
command -v sox >/dev/null || fail "sox joins the eval recordings (apt-get install sox)"
PARLEY_BUILD_DIR=$work "$source_dir/scripts/prepare-models" >/dev/null
mapfile -t parts < <(find "$shared/eval" -name '*.wav' | LC_ALL=C sort)
sox -D "${parts[@]}" -r 16000 -c 1 -b 16 "$work/eval.wav"

status=0
"$gate" --segmentation "$work/models/segmentation-3.0-fp32-folded.onnx" \
  --embedding "$work/models/resnet34-speed-twin.onnx" --plda "$work/models/plda" \
  --audio "$work/eval.wav" --step 1 --threads 2 --out "$work/graph" --provider cpu \
  --candidate-pooling graph --candidate-features graph --worst 3 | tee "$work/graph.txt" ||
  status=$?
[ "$status" -eq 0 ] || fail "the graph path must pass the gate against host pooling (exit $status)"
/usr/bin/python3 - "$work/graph/gate.json" <<'PY' || fail "gate.json of the graph path"
import json, sys
d = json.load(open(sys.argv[1]))
print(f"min cosine {d['min_cosine']:.12f} over {d['pairs']} pairs of {d['chunks']} chunks; worst:",
      [(p["chunk"], p["speaker"], round(p["cosine"], 12)) for p in d["worst_pairs"]])
assert "pooling=graph, features=graph" in d["candidate"], d["candidate"]
assert d["chunks"] > 500 and d["pairs"] > 1000 and d["pairs_in_one_only"] == 0
# Float rounding only: the host's sums run in double, the graph's in float32.
assert d["passes"] and d["min_cosine"] > 0.99999, d["min_cosine"]
PY
echo "embedding gate: the graph path passes against host pooling on eval, the last chunk included"
