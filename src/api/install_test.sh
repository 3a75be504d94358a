#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR MODELS_DIR AUDIO [WHEEL_DIR]: README.md's C and Python
# flows as a user follows them, with an empty home: `cmake --install` into ~/.local (the models
# of BUILD_DIR/models included, prepared first as scripts/setup does), examples/diarize.c built
# against it with find_package(parley) and with pkg-config (PKG_CONFIG_PATH, no other flag) and
# run without LD_LIBRARY_PATH and without a models folder: the installed library must find the
# installed models. Then the installed parley command the same way, and the wheel installed
# offline into a virtual environment made from /usr/bin/python3 with --system-site-packages,
# whose examples/diarize.py finds the build tree's models, imports numpy and parley.distributed.
# MODELS_DIR serves the one run that names a models folder.
set -euo pipefail
build=$(realpath "$1") source=$(realpath "$2") models=$3 audio=$4 wheels=${5:-}
work=$(realpath "$(mktemp -d)")
trap 'rm -rf "$work"' EXIT
PARLEY_BUILD_DIR=$build "$source/scripts/prepare-models" >/dev/null
home=$work/home
prefix=$home/.local
mkdir -p "$home"
# What a user's shell has: no parley variables, no library path, a home of its own.
as_user() { env -u LD_LIBRARY_PATH -u PARLEY_MODELS -u XDG_CACHE_HOME -u PKG_CONFIG_PATH \
              HOME="$home" "$@"; }
as_user cmake --install "$build" --prefix "$prefix" >/dev/null
for file in include/parley/parley.h lib/libparley.so.1 lib/libparley.so bin/parley \
    lib/pkgconfig/parley.pc lib/cmake/parley/parleyConfig.cmake \
    lib/cmake/parley/parleyConfigVersion.cmake lib/libonnxruntime.so.1 share/doc/parley/LICENSE \
    share/parley/models/resnet34-speed-twin.onnx share/parley/models/plda/plda.npz \
    share/parley/models/segmentation-3.0-fp16.onnx; do
  [ -e "$prefix/$file" ] || { echo "FAILED: $file was not installed" >&2; exit 1; }
done
# The models are copies: build/models links into ../shared, which an install must not need.
if find "$prefix/share/parley/models" -type l | grep -q .; then
  echo "FAILED: share/parley/models holds links:" >&2
  find "$prefix/share/parley/models" -type l >&2
  exit 1
fi
expect_turns() {  # a run of the example must print its summary and at least one turn
  grep -qE "[0-9]+ speakers?," "$1" && grep -q "SPEAKER_00" "$1" ||
    { echo "FAILED: $2 printed:" >&2; cat "$1" >&2; exit 1; }
}
expect_models_from() {  # the speed-twin warning names the embedding model the run used
  grep -qF "$1/resnet34-speed-twin.onnx" "$2" ||
    { echo "FAILED: $3 did not use the models in $1; it printed:" >&2; cat "$2" >&2; exit 1; }
}
installed_models=$prefix/share/parley/models

# The installed command runs on its own (ONNX Runtime found through its RUNPATH) and finds the
# installed models.
as_user "$prefix/bin/parley" diarize --quiet "$audio" >"$work/cli.rttm" 2>"$work/cli.err"
grep -q "^SPEAKER " "$work/cli.rttm" || { echo "FAILED: installed parley wrote no turns" >&2; exit 1; }
expect_models_from "$installed_models" "$work/cli.err" "the installed parley"
as_user "$prefix/bin/parley" models list >"$work/list.txt"
grep -qF "embedding       $installed_models/resnet34-speed-twin.onnx" "$work/list.txt" ||
  { echo "FAILED: parley models list:" >&2; cat "$work/list.txt" >&2; exit 1; }
# A named folder is searched instead of the installed ones.
as_user "$prefix/bin/parley" diarize --quiet --models "$models" "$audio" >/dev/null 2>"$work/named.err"
expect_models_from "$models" "$work/named.err" "the installed parley with --models"

as_user cmake -S "$source/examples" -B "$work/cmake-build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
as_user cmake --build "$work/cmake-build" >/dev/null
as_user "$work/cmake-build/diarize" "$audio" >"$work/cmake.txt" 2>"$work/cmake.err"
expect_turns "$work/cmake.txt" "the example built with find_package(parley)"
expect_models_from "$installed_models" "$work/cmake.err" "the example built with find_package"

# As the README says it: PKG_CONFIG_PATH, and nothing else (the run path comes from parley.pc).
as_user bash -c 'cc -std=c11 -Wall -Werror "$1" $(PKG_CONFIG_PATH=~/.local/lib/pkgconfig \
  pkg-config --cflags --libs parley) -o "$2"' - "$source/examples/diarize.c" "$work/diarize-pc"
as_user "$work/diarize-pc" "$audio" >"$work/pkg-config.txt" 2>"$work/pkg-config.err"
expect_turns "$work/pkg-config.txt" "the example built with pkg-config"
expect_models_from "$installed_models" "$work/pkg-config.err" "the example built with pkg-config"
diff "$work/cmake.txt" "$work/pkg-config.txt"

# One ABI number: the installed header's, parley.pc's, the CMake package's and the SONAME's.
abi=$(sed -n 's/^#define PARLEY_ABI_VERSION \([0-9]*\)$/\1/p' "$prefix/include/parley/parley.h")
pc_abi=$(PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name parley.pc | head -1)") \
  pkg-config --variable=abi_version parley)
if [ -z "$abi" ] || [ "$pc_abi" != "$abi" ] ||
   ! grep -q "set(parley_ABI_VERSION $abi)" "$(find "$prefix" -name parleyConfig.cmake | head -1)" ||
   [ -z "$(find "$prefix" -name "libparley.so.$abi")" ]; then
  echo "FAILED: the ABI numbers disagree (header '$abi', parley.pc '$pc_abi')" >&2
  exit 1
fi

if [ -n "$wheels" ]; then
  wheel=$(ls "$wheels"/parley-*.whl)
  # The wheel says its license and carries the text.
  /usr/bin/python3 - "$wheel" <<'PYTHON'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
archive = zipfile.ZipFile(sys.argv[1])
metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
license_file = next((n for n in names if n.endswith(".dist-info/LICENSE")), None)
text = archive.read(metadata).decode()
if "License: MIT" not in text or license_file is None or \
        b"MIT License" not in archive.read(license_file):
    sys.exit(f"FAILED: the wheel's metadata or LICENSE: {text}")
PYTHON
  as_user /usr/bin/python3 -m venv --system-site-packages "$work/venv"
  as_user "$work/venv/bin/pip" install --quiet --no-index "$wheel"
  (cd "$work" && as_user "$work/venv/bin/python" "$source/examples/diarize.py" "$audio" \
    >"$work/python.txt" 2>"$work/python.err")
  expect_turns "$work/python.txt" "examples/diarize.py with the installed wheel"
  # Found by the library in the venv: the models of the build tree it was built in.
  expect_models_from "$build/models" "$work/python.err" "examples/diarize.py in a venv"
  # The same models as the installed ones (copies), so the same turns as the C example (whose
  # first line names the embedding size too).
  diff <(tail -n +2 "$work/cmake.txt") <(tail -n +2 "$work/python.txt")
  # Debian's numpy and Dask are visible in the venv: embeddings and parley.distributed work.
  as_user "$work/venv/bin/python" -c "
import sys, parley, parley.distributed
d = parley.Pipeline()(sys.argv[1])
assert d.embeddings.shape == (len(d.speakers), 256), d.embeddings.shape" "$audio"
fi
echo "installed, built with find_package and pkg-config, ran on $(basename "$audio")"
