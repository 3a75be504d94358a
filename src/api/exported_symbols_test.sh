#!/usr/bin/env bash
# exported_symbols_test.sh LIBRARY ABI: fails when LIBRARY exports a symbol not named parley_*,
# lacks a C API function, or its SONAME and symbol version are not those of ABI (the
# PARLEY_ABI_VERSION of include/parley/parley.h).
set -euo pipefail
library=$1 abi=$2
exported=$(nm -D --defined-only "$library" | awk '{print $NF}' | sed 's/@.*//')
[ -n "$exported" ] || { echo "no exported symbols in $library" >&2; exit 1; }
others=$(grep -v '^parley_' <<<"$exported" | grep -v "^PARLEY_${abi}\$" || true)
if [ -n "$others" ]; then
  echo "$library exports symbols outside the C API:" >&2
  head -20 <<<"$others" >&2
  exit 1
fi
for function in parley_diarizer_new parley_abi_version parley_set_log_callback parley_stream_new \
                parley_set_log_level parley_result_format parley_free parley_options_json \
                parley_options_new parley_options_set parley_options_values_json \
                parley_diarizer_new_from parley_batch_new_from parley_run_finished_from; do
  grep -qx "$function" <<<"$exported" || { echo "$function is not exported" >&2; exit 1; }
done
# The speaker library's and identification's (docs/identity.md).
for function in parley_library_open parley_identify parley_library_rename \
                parley_library_export_json parley_library_import_json \
                parley_identification_format; do
  grep -qx "$function" <<<"$exported" || { echo "$function is not exported" >&2; exit 1; }
done
# A text written as parley writes its outputs (Python's Diarization.write goes through it).
grep -qx parley_write_file <<<"$exported" || { echo "parley_write_file is not exported" >&2; exit 1; }
versions=$(nm -D --defined-only "$library" | awk '{print $NF}' | sed -n 's/^parley_[a-z_]*@@*//p' | sort -u)
[ "$versions" = "PARLEY_${abi}" ] || { echo "symbol versions '$versions', expected PARLEY_${abi}" >&2; exit 1; }
soname=$(readelf -d "$library" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libparley.so.${abi}" ] || { echo "SONAME '$soname' is not libparley.so.${abi}" >&2; exit 1; }
echo "$(wc -l <<<"$exported") symbols, all parley_*; SONAME $soname"
