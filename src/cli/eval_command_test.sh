#!/usr/bin/env bash
# CTest: `parley eval` and `parley bench` as a user runs them, on ami-debug recordings with the
# real segmentation model and the tiny test embedding model (labels are noise; every stage runs).
#   eval_command_test.sh PARLEY WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR)
# Skips (exit 77) without the shared folder; fails when a file it needs is missing from it.
set -euo pipefail
parley=$1 write_model=$2 work=$3
source "$(dirname "${BASH_SOURCE[0]}")/../testing/require_shared.sh"
shared=${PARLEY_SHARED_DIR:?}
ami=$shared/eval/ami-debug
rm -rf "$work"; mkdir -p "$work/models"
fail() { echo "FAILED: $1" >&2; exit 1; }
check() { if ! eval "$1"; then fail "$2"; fi; }
json() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/ami-debug/dev00.wav
ln -s "$shared/models/segmentation-3.0-fp16.onnx" "$shared/models/plda" "$work/models/"
"$write_model" "$work/models/tiny-embedding.onnx"
models=(--models "$work/models" --embedding-model "$work/models/tiny-embedding.onnx"
        --clustering ahc --step 2)
engine=("${models[@]}" --threads 2)

# A pyannote list with its RTTM and UEM: two recordings, results written one by one.
"$parley" eval --list "$ami/debug.development.lst" --audio-dir "$ami" \
  --rttm "$ami/debug.development.rttm" --uem "$ami/debug.development.uem" "${engine[@]}" \
  --out "$work/run" --json "$work/first.json" >"$work/table" 2>"$work/stderr"
check 'grep -q "^dev00 " "$work/table" && grep -q "^dev01 " "$work/table" && grep -q "^TOTAL " "$work/table"' "table rows"
check '[ -s "$work/run/files/dev00.rttm" ] && [ -s "$work/run/files/dev01.json" ] && [ -s "$work/run/eval.json" ]' "results per file"
check 'cmp -s "$work/first.json" "$work/run/eval.json"' "--json and --out/eval.json agree"
check 'json "$work/first.json" "d[\"schema\"] == \"parley-eval/2\" and d[\"scoring\"][\"uem\"] and len(d[\"files\"]) == 2 and d[\"total\"][\"failed\"] == 0"' "eval JSON"
# The overall row is totals over files (sum of error seconds / sum of reference seconds).
check 'json "$work/first.json" "abs(d[\"total\"][\"der\"] - sum(f[\"missed_seconds\"] + f[\"false_alarm_seconds\"] + f[\"confusion_seconds\"] for f in d[\"files\"]) / sum(f[\"total\"] for f in d[\"files\"])) < 1e-9 and abs(d[\"total\"][\"speed\"] - sum(f[\"audio_seconds\"] for f in d[\"files\"]) / sum(f[\"wall_seconds\"] for f in d[\"files\"])) < 1e-9 and abs(d[\"total\"][\"real_time_factor\"] * d[\"total\"][\"speed\"] - 1) < 1e-9"' "totals over files"
# Decoding runs alongside the networks (corpus::diarize_file), so the other stages alone fit.
check 'json "$work/first.json" "all(sum(v for k, v in f[\"stage_seconds\"].items() if k != \"decode\") <= f[\"wall_seconds\"] + 1e-6 and \"decode\" in f[\"stage_seconds\"] for f in d[\"files\"])"' "stage times within wall time"
# The scores are those of `parley score` on the written hypothesis.
cat "$work/run/files/"*.rttm >"$work/hyp.rttm"
"$parley" score --ref "$ami/debug.development.rttm" --uem "$ami/debug.development.uem" \
  --hyp "$work/hyp.rttm" --json >"$work/score.json"
/usr/bin/python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['total']['der']; b=json.load(open(sys.argv[2]))['total']['der']; sys.exit(0 if abs(a-b) < 1e-12 else 1)" \
  "$work/first.json" "$work/score.json" || fail "eval and score agree"

# eval's hypotheses are a run of `parley diarize --out-dir` into DIR/files (the same names,
# settings, records and turns): a diarize run over that folder finds everything finished and
# leaves it alone, and an eval run over a folder diarize filled takes its hypotheses over.
stamps() { (cd "$1" && find . -type f -newer "$work/first.json" | sort); }
"$parley" diarize "${engine[@]}" --out-dir "$work/run/files" "$ami/dev00.wav" "$ami/dev01.wav" \
  2>"$work/stderr"
check 'grep -q "nothing diarized: 2 of 2 recordings done earlier" "$work/stderr"' "diarize skips what eval finished"
check '[ -z "$(stamps "$work/run/files")" ]' "diarize rewrote nothing of eval's"
"$parley" diarize "${engine[@]}" --quiet --out-dir "$work/cli/files" "$ami/dev00.wav" "$ami/dev01.wav"
check 'cmp -s "$work/cli/files/dev00.rttm" "$work/run/files/dev00.rttm" && cmp -s "$work/cli/files/dev01.rttm" "$work/run/files/dev01.rttm"' "eval's hypotheses are diarize's turns"
/usr/bin/python3 -c "import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); sys.exit(0 if a['fingerprint'] == b['fingerprint'] and a['settings'] == b['settings'] and a['output_sha256'] == b['output_sha256'] else 1)" \
  "$work/cli/files/.parley/dev00.rttm.json" "$work/run/files/.parley/dev00.rttm.json" || fail "eval's records are diarize's"
"$parley" eval --list "$ami/debug.development.lst" --audio-dir "$ami" \
  --rttm "$ami/debug.development.rttm" --uem "$ami/debug.development.uem" "${engine[@]}" \
  --out "$work/cli" --json "$work/cli.json" >/dev/null 2>"$work/stderr"
check '[ "$(grep -c "from the earlier run" "$work/stderr")" -eq 2 ]' "eval takes over what diarize finished"
check 'json "$work/cli.json" "[f[\"der\"] for f in d[\"files\"]] == [f[\"der\"] for f in json.load(open(\"$work/first.json\"))[\"files\"]]"' "same scores from diarize's hypotheses"

# Resume: nothing is diarized again; a scoring change only rescores.
"$parley" eval --list "$ami/debug.development.lst" --audio-dir "$ami" \
  --rttm "$ami/debug.development.rttm" --uem "$ami/debug.development.uem" "${engine[@]}" \
  --out "$work/run" --collar 0.25 --json "$work/collar.json" >/dev/null 2>"$work/stderr"
check '[ "$(grep -c "from the earlier run" "$work/stderr")" -eq 2 ]' "resume skips finished files"
check 'json "$work/collar.json" "d[\"files\"][0][\"wall_seconds\"] == json.load(open(\"$work/first.json\"))[\"files\"][0][\"wall_seconds\"] and d[\"files\"][0][\"resumed\"] and d[\"scoring\"][\"collar\"] == 0.25"' "resumed record keeps its timing"
check 'json "$work/collar.json" "d[\"total\"][\"der\"] <= json.load(open(\"$work/first.json\"))[\"total\"][\"der\"]"' "a collar forgives errors"
# An emptied hypothesis is not scored as 100 % missed "from the earlier run": it is redone.
: >"$work/run/files/dev00.rttm"
"$parley" eval --list "$ami/debug.development.lst" --audio-dir "$ami" \
  --rttm "$ami/debug.development.rttm" --uem "$ami/debug.development.uem" "${engine[@]}" \
  --out "$work/run" --collar 0.25 >/dev/null 2>"$work/stderr"
check 'grep -q "dev00: the earlier hypothesis .* does not match its record" "$work/stderr"' "emptied hypothesis redone"
check '[ -s "$work/run/files/dev00.rttm" ] && grep -q "dev01:.*from the earlier run" "$work/stderr"' "only the damaged file redone"
# A changed setting redoes the file and says what changed; threads are not a setting that matters.
rm "$work/run/files/.parley/dev01.rttm.json"
"$parley" eval --list "$ami/debug.development.lst" --audio-dir "$ami" \
  --rttm "$ami/debug.development.rttm" --uem "$ami/debug.development.uem" "${models[@]}" \
  --threads 1 --ahc-threshold 0.5 --out "$work/run" >/dev/null 2>"$work/stderr"
check 'grep -q "dev00: settings changed since the earlier run (clustering: .*); diarizing again" "$work/stderr"' "changed setting redone"
check '! grep -q "dev00.*from the earlier run" "$work/stderr" && ! grep -q "dev01: settings changed" "$work/stderr"' "interrupted file redone"
check 'json "$work/run/eval.json" "not any(f[\"resumed\"] for f in d[\"files\"])"' "both diarized"

# Bad input: a URI the reference lacks (ami-debug's trñ00 vs trn00) and a manifest line whose
# audio is missing fail on their own; the other recordings are scored; exit status 1.
printf 'trñ00\ntrn01\n' >"$work/two.lst"
set +e
"$parley" eval --list "$work/two.lst" --audio-dir "$ami" --rttm "$ami/debug.train.rttm" \
  --uem "$ami/debug.train.uem" "${engine[@]}" --json "$work/bad.json" >"$work/table" 2>"$work/stderr"; status=$?
set -e
check '[ $status -eq 1 ] && grep -q "1 of 2 recordings failed" "$work/stderr"' "failed URI: exit status"
check 'grep -q "trñ00.*is not in the reference" "$work/table" && grep -q "^trn01 " "$work/table"' "failed URI reported, other scored"
check 'json "$work/bad.json" "d[\"total\"][\"failed\"] == 1 and d[\"total\"][\"scored\"] == 1 and d[\"files\"][1][\"status\"] == \"ok\""' "failed URI JSON"
# Destinations are checked before any work, in parley's words: an --out that is a file gave
# "internal error: filesystem error" after the models loaded; --json into a missing folder.
echo "not a folder" >"$work/out-file"
set +e
"$parley" eval --list "$work/two.lst" --audio-dir "$ami" --rttm "$ami/debug.train.rttm" \
  "${engine[@]}" --out "$work/out-file" >"$work/table" 2>"$work/stderr"; status=$?
set -e
check '[ $status -eq 1 ] && [ "$(cat "$work/stderr")" = "parley: error: --out $work/out-file: exists and is not a folder; name a folder (it is created if missing)" ]' "--out naming a file"
check '[ "$(cat "$work/out-file")" = "not a folder" ] && [ ! -s "$work/table" ]' "--out file untouched, nothing done"
set +e
"$parley" eval --list "$work/two.lst" --audio-dir "$ami" --rttm "$ami/debug.train.rttm" \
  "${engine[@]}" --json "$work/no-such-folder/eval.json" >"$work/table" 2>"$work/stderr"; status=$?
set -e
check '[ $status -eq 1 ] && [ "$(cat "$work/stderr")" = "parley: error: --json $work/no-such-folder/eval.json: the folder $work/no-such-folder does not exist" ]' "--json into a missing folder"
mkdir -p "$work/set"
printf '%s\t%s\t%s\n' "$ami/tst00.wav" "$ami/debug.test.rttm" "$ami/debug.test.uem" \
  "missing.wav" "$ami/debug.test.rttm" "" >"$work/set/manifest.tsv"
set +e
"$parley" eval --manifest "$work/set/manifest.tsv" "${engine[@]}" --json - >"$work/manifest.json" 2>"$work/stderr"; status=$?
set -e
check '[ $status -eq 1 ] && grep -q "missing.wav" "$work/stderr"' "manifest: missing audio reported"
check 'json "$work/manifest.json" "d[\"files\"][0][\"uri\"] == \"tst00\" and d[\"files\"][0][\"status\"] == \"ok\" and d[\"files\"][1][\"status\"] == \"failed\""' "manifest JSON"

# bench: JSON fields, stage times within each run's wall time, memory.
"$parley" bench "$ami/dev00.wav" "${engine[@]}" --warmup 1 --repeat 2 --json -q >"$work/bench.json"
check 'json "$work/bench.json" "d[\"schema\"] == \"parley-bench/2\" and d[\"warmup\"] == 1 and d[\"repeat\"] == 2 and d[\"peak_rss_bytes\"] > 0 and d[\"device_memory\"] is None"' "bench JSON header"
check 'json "$work/bench.json" "all(set(f[\"wall_seconds\"]) == {\"min\", \"median\", \"mean\"} and f[\"audio_seconds\"] > 29 and f[\"speed\"][\"median\"] > 0 and abs(f[\"real_time_factor\"][\"min\"] - f[\"wall_seconds\"][\"min\"] / f[\"audio_seconds\"]) < 1e-9 for f in d[\"files\"])"' "bench stats"
check 'json "$work/bench.json" "all(list(f[\"stage_seconds\"]) == [\"decode\", \"segmentation\", \"embedding\", \"clustering\", \"reconstruction\", \"output\"] for f in d[\"files\"])"' "bench stages"
check 'json "$work/bench.json" "all(len(f[\"runs\"]) == 2 and all(sum(r[\"stage_seconds\"].values()) <= r[\"wall_seconds\"] + 1e-6 for r in f[\"runs\"]) for f in d[\"files\"])"' "stage times sum within wall"
"$parley" bench "$ami/dev00.wav" "${engine[@]}" --warmup 0 --repeat 1 >"$work/bench.txt" 2>/dev/null
check 'grep -q "^dev00 " "$work/bench.txt" && grep -q "peak RSS" "$work/bench.txt" && grep -q "n/a (CPU)" "$work/bench.txt"' "bench table"

# Charts (gnuplot): eval with a compared system, bench per file.
if command -v gnuplot >/dev/null; then
  echo '{"system": "peer system", "total": {"der": 0.4, "speed": 40, "audio_seconds": 60, "stage_seconds": {"total": 1.5}}}' >"$work/peer.json"
  "$parley" eval --list "$ami/debug.development.lst" --audio-dir "$ami" \
    --rttm "$ami/debug.development.rttm" "${models[@]}" --threads 1 --ahc-threshold 0.5 \
    --out "$work/run" --compare "$work/peer.json" --plot "$work/eval.png" -q >/dev/null
  check '[ "$(head -c 4 "$work/eval.png" | tail -c 3)" = "PNG" ]' "eval chart"
  "$parley" bench "$ami/dev00.wav" "${engine[@]}" --warmup 0 --repeat 1 --plot "$work/bench.svg" -q >/dev/null
  check 'grep -q "<svg" "$work/bench.svg" && grep -q "embedding" "$work/bench.svg"' "bench chart"
else
  echo "gnuplot not installed (Debian package gnuplot-nox): charts not checked"
fi
set +e
PARLEY_GNUPLOT=/nonexistent "$parley" bench "$ami/dev00.wav" "${engine[@]}" --warmup 0 --repeat 1 \
  --plot "$work/none.png" -q >/dev/null 2>"$work/err"; status=$?
set -e
check '[ $status -eq 1 ] && grep -q "gnuplot-nox" "$work/err"' "missing gnuplot names the package"
echo "eval and bench behave as documented"
