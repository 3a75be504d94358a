#!/usr/bin/env bash
# scripts/check-tidy selects the library sources changed against main and those that include a
# changed header, directly, through another header or beside it ("name.h"), but not tests or the
# CLI: checked with --list on a small git repository in a temporary folder.
set -euo pipefail
script=$(cd "$(dirname "$0")" && pwd)/check-tidy
work=$(mktemp -d "${TMPDIR:-/tmp}/check-tidy-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.invalid
export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.invalid
git init -q -b main
mkdir -p scripts src/core src/audio src/cli
cp "$script" scripts/check-tidy
printf '#pragma once\n' >src/core/a.h
printf '#include "core/a.h"\n' >src/core/a.cpp
printf '#pragma once\n#include "core/a.h"\n' >src/core/b.h
printf '#include "core/b.h"\n' >src/audio/through_b.cpp
printf '#include "a.h"\n' >src/core/beside.cpp
printf '#include "core/b.h"\n' >src/core/a_test.cpp
printf '#include "core/a.h"\n' >src/cli/main.cpp
printf '#pragma once\n' >src/audio/other.h
printf '#include "audio/other.h"\n' >src/audio/unrelated.cpp
git add -A
git commit -q -m base
git checkout -q -b change

selected() { PARLEY_TIDY_SLICES=0 scripts/check-tidy --list | tr '\n' ' '; }
expect() {
  local got
  got=$(selected)
  [ "$got" = "$1" ] || { echo "FAIL: $2: selected '$got', expected '$1'" >&2; exit 1; }
  echo "ok $2"
}

expect "" "nothing changed"
printf '#pragma once\nint changed();\n' >src/core/a.h
git commit -q -am "change a.h"
expect "src/audio/through_b.cpp src/core/a.cpp src/core/beside.cpp " \
  "a changed header selects its includers, not tests or the CLI"
git checkout -q main
git checkout -q -b source
printf '#include "audio/other.h"\nint x;\n' >src/audio/unrelated.cpp
git commit -q -am "change a source"
expect "src/audio/unrelated.cpp " "a changed source selects itself alone"
