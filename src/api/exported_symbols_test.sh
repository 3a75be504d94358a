#!/usr/bin/env bash
# exported_symbols_test.sh LIBRARY: fails when LIBRARY exports a symbol not named parley_*, or
# has no SONAME with the ABI version.
set -euo pipefail
library=$1
exported=$(nm -D --defined-only "$library" | awk '{print $NF}' | sed 's/@.*//')
[ -n "$exported" ] || { echo "no exported symbols in $library" >&2; exit 1; }
others=$(grep -v '^parley_' <<<"$exported" | grep -v '^PARLEY_1$' || true)
if [ -n "$others" ]; then
  echo "$library exports symbols outside the C API:" >&2
  head -20 <<<"$others" >&2
  exit 1
fi
grep -qx parley_diarizer_new <<<"$exported" || { echo "parley_diarizer_new is not exported" >&2; exit 1; }
soname=$(readelf -d "$library" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $soname =~ ^libparley\.so\.[0-9]+$ ]] || { echo "SONAME '$soname' lacks an ABI version" >&2; exit 1; }
echo "$(wc -l <<<"$exported") symbols, all parley_*; SONAME $soname"
