#!/usr/bin/env bash
# with_test_models.sh PROGRAM ARGS...: runs PROGRAM with @MODELS@ in its arguments replaced by a
# temporary models folder (../shared's segmentation model and PLDA, and the ResNet34 speed twin)
# and @SHARED@ by the shared data folder. Exits 77 (skipped) when ../shared is absent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../testing/require_shared.sh"
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/falcon-test/test.wav
shared=$PARLEY_SHARED_DIR
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
ln -s "$(realpath "$shared/models/segmentation-3.0-fp16.onnx")" "$models/"
ln -s "$(realpath "$shared/models/plda")" "$models/plda"
/usr/bin/python3 "$here/../../tools/make_speed_twin.py" --output "$models/resnet34-speed-twin.onnx" >/dev/null
arguments=()
for argument in "$@"; do
  argument=${argument//@MODELS@/$models}
  arguments+=("${argument//@SHARED@/$shared}")
done
"${arguments[@]}"
