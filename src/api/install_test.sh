#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR MODELS_DIR AUDIO [WHEEL_DIR]: installs parley into a
# temporary prefix, builds examples/diarize.c against it with find_package(parley) and with
# pkg-config, runs both (and the installed parley command) on AUDIO, then installs the wheel into
# a fresh virtual environment offline and runs examples/diarize.py with it.
set -euo pipefail
build=$1 source=$2 models=$3 audio=$4 wheels=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for file in include/parley/parley.h lib/libparley.so.1 lib/libparley.so bin/parley \
    lib/pkgconfig/parley.pc lib/cmake/parley/parleyConfig.cmake \
    lib/cmake/parley/parleyConfigVersion.cmake lib/libonnxruntime.so.1; do
  [ -e "$prefix/$file" ] || { echo "FAILED: $file was not installed" >&2; exit 1; }
done
expect_turns() {  # a run of the example must print its summary and at least one turn
  grep -q "speakers" "$1" && grep -q "SPEAKER_00" "$1" ||
    { echo "FAILED: $2 printed:" >&2; cat "$1" >&2; exit 1; }
}

# The installed command runs on its own (ONNX Runtime found through its RUNPATH).
env -u LD_LIBRARY_PATH "$prefix/bin/parley" diarize --quiet --models "$models" "$audio" \
  >"$work/cli.rttm"
grep -q "^SPEAKER " "$work/cli.rttm" || { echo "FAILED: installed parley wrote no turns" >&2; exit 1; }

cmake -S "$source/examples" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/diarize" "$audio" "$models" >"$work/cmake.txt" 2>/dev/null
expect_turns "$work/cmake.txt" "the example built with find_package(parley)"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc -std=c11 -Wall -Werror "$source/examples/diarize.c" $(pkg-config --cflags --libs parley) \
  -Wl,-rpath,"$(pkg-config --variable=libdir parley)" -o "$work/diarize-pkg-config"
"$work/diarize-pkg-config" "$audio" "$models" >"$work/pkg-config.txt" 2>/dev/null
expect_turns "$work/pkg-config.txt" "the example built with pkg-config"
diff "$work/cmake.txt" "$work/pkg-config.txt"

if [ -n "$wheels" ]; then
  wheel=$(ls "$wheels"/parley-*.whl)
  /usr/bin/python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet --no-index "$wheel"
  (cd "$work" && "$work/venv/bin/python" "$source/examples/diarize.py" "$audio" "$models" \
    >"$work/python.txt" 2>/dev/null)
  expect_turns "$work/python.txt" "examples/diarize.py with the installed wheel"
  # The same turns as the C example (its first line names the embedding size too).
  diff <(tail -n +2 "$work/cmake.txt") <(tail -n +2 "$work/python.txt")
fi
echo "installed, built with find_package and pkg-config, ran on $(basename "$audio")"
