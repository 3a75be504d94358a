#!/usr/bin/env bash
# CTest: require_shared skips without the shared folder, fails on a file missing under it, and
# passes when the file is there (checked against a fake shared folder).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/require_shared.sh"
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
outcome() { (PARLEY_SHARED_DIR=$1 require_shared "${@:2}") >/dev/null 2>&1; echo $?; }
expect() { [ "$2" = "$3" ] || { echo "FAILED: $1: exit status $2, expected $3" >&2; exit 1; }; }
expect "no shared folder" "$(outcome "$fake/absent" models/a.onnx)" 77
expect "file missing under the shared folder" "$(outcome "$fake" models/a.onnx)" 1
mkdir -p "$fake/models" && touch "$fake/models/a.onnx"
expect "file present" "$(outcome "$fake" models/a.onnx)" 0
expect "one of two missing" "$(outcome "$fake" models/a.onnx models/b.onnx)" 1
echo "require_shared: skip, fail and pass as expected"
