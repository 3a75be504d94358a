#!/usr/bin/env bash
# CTest: the embedding gate (bench/embedding_gate.cpp) on the CPU against itself, with the real
# segmentation model (folded to float32) and the ResNet34 speed twin on a 19 s recording of three
# speakers. Fed the reference's masks, the CPU's embedding stage must give its own pipeline's
# embeddings to the bit, so the gate passes with every cosine 1 and the same RTTM, and
# tools/compare_intermediates.py sees every frame equal. A candidate that computes differently (exact mode against the shared
# trunk) must fail it. The candidate forced onto an accelerator's path on the CPU (trunk pooling
# and features in the graph) must pass it, with its worst pairs reported (the graph masks what
# its last pass runs past the recording's end, so the last chunk agrees too).
#   embedding_gate_test.sh EMBEDDING_GATE SOURCE_DIR WORK_DIR   (PARLEY_SHARED_DIR)
set -euo pipefail
gate=$1 source_dir=$2 work=$3
source "$source_dir/src/testing/require_shared.sh"
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/falcon-test/test.wav
shared=$PARLEY_SHARED_DIR
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAILED: $1" >&2; exit 1; }
json() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
# The models bench/gpu/bundle carries: the float32-folded segmentation and the speed twin.
PARLEY_BUILD_DIR=$work "$source_dir/scripts/prepare-models" >/dev/null
models=(--segmentation "$work/models/segmentation-3.0-fp32-folded.onnx"
        --embedding "$work/models/resnet34-speed-twin.onnx" --plda "$work/models/plda"
        --audio "$shared/eval/falcon-test/test.wav" --threads 1)

"$gate" "${models[@]}" --out "$work/same" --provider cpu | tee "$work/same.txt" ||
  fail "the CPU against itself must pass the gate"
grep -q "(bit-identical).*RTTMs identical: passes the gate" "$work/same.txt" || fail "report line"
json "$work/same/gate.json" 'd["passes"] and d["embeddings_bit_identical"] and d["min_cosine"] > 0.9999999 and d["max_abs_difference"] == 0.0 and d["pairs"] > 20 and d["pairs_in_one_only"] == 0 and d["der_against_reference"] == 0.0 and d["rttms_identical"] and d["reference_speakers"] == d["candidate_speakers"] > 0' ||
  fail "gate.json of the CPU against itself"
cmp -s "$work/same/reference.rttm" "$work/same/candidate.rttm" || fail "RTTMs differ"
# The saved folders are what compare_intermediates.py reads: same masks, so every frame is equal.
/usr/bin/python3 "$source_dir/tools/compare_intermediates.py" "$work/same/reference" \
  "$work/same/candidate" | tee "$work/compare.txt" || fail "compare_intermediates.py on equal runs"
grep -q "^frames equal 100.000 % .* min cosine 1.000000: passes" "$work/compare.txt" ||
  fail "compare_intermediates.py: every frame and embedding equal"

# A candidate whose embeddings differ fails the gate (exit 1), with the pairs under the cosine.
status=0
"$gate" "${models[@]}" --out "$work/exact" --candidate-embedding-mode exact >"$work/exact.txt" ||
  status=$?
cat "$work/exact.txt"
[ "$status" -eq 1 ] || fail "exact mode against the shared trunk: exit 1 expected, got $status"
grep -q "FAILS the gate" "$work/exact.txt" || fail "the failing report line"
json "$work/exact/gate.json" 'not d["passes"] and not d["embeddings_bit_identical"] and d["min_cosine"] < 0.999 and d["pairs_below_min_cosine"] > 0' ||
  fail "gate.json of a differing candidate"
# An accelerator's default path (pooling and features in the graph), forced on the CPU: it runs,
# gate.json lists the pairs of lowest cosine, lowest first, with what their masks pooled.
status=0
"$gate" "${models[@]}" --out "$work/graph" --candidate-pooling graph --candidate-features graph \
  --worst 5 >"$work/graph.txt" || status=$?
cat "$work/graph.txt"
[ "$status" -eq 0 ] || fail "forced graph pooling must pass the gate: exit $status"
json "$work/graph/gate.json" '"pooling=graph, features=graph" in d["candidate"] and "pooling=auto, features=auto" in d["reference"] and d["pairs"] > 20 and d["pairs_in_one_only"] == 0 and d["passes"] and d["min_cosine"] > 0.99999' ||
  fail "gate.json of the forced graph candidate"
json "$work/graph/gate.json" 'len(d["worst_pairs"]) == 5 and d["worst_pairs"][0]["cosine"] == d["min_cosine"] and all(a["cosine"] <= b["cosine"] for a, b in zip(d["worst_pairs"], d["worst_pairs"][1:])) and all(0 < p["trunk_frames_weighted"] <= 125 and p["active_frames"] >= p["frames_speaking_alone"] and p["mask_weight_sum"] >= 1 and p["chunk_start_seconds"] == p["chunk"] for p in d["worst_pairs"])' ||
  fail "worst_pairs of the forced graph candidate"
# The reference on the same path: the CPU against itself again, to the bit.
"$gate" "${models[@]}" --out "$work/graph-both" --reference-pooling graph \
  --reference-features graph >"$work/graph-both.txt" || fail "graph path against itself"
json "$work/graph-both/gate.json" 'd["passes"] and d["embeddings_bit_identical"] and "pooling=graph, features=graph" in d["reference"] and "pooling=graph, features=graph" in d["candidate"]' ||
  fail "gate.json of the graph path against itself"
json "$work/same/gate.json" 'len(d["worst_pairs"]) == 10 and all(p["cosine"] > 0.9999999 and p["max_abs_difference"] == 0.0 for p in d["worst_pairs"])' ||
  fail "worst_pairs of the CPU against itself"
echo "embedding gate: exact on the CPU against itself, failing for a differing candidate"
