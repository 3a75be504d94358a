#!/usr/bin/env bash
# CTest: `parley voiceprint` and `parley diarize --voiceprints / --link-speakers` end to end, with
# the speed twin (random weights: the same audio gives the same embedding, which is what these
# checks rest on; which voices match is not).
#   voiceprint_command_test.sh PARLEY SOURCE_DIR WORK_DIR   (PARLEY_SHARED_DIR: the shared data)
set -euo pipefail
parley=$1 source_dir=$2 work=$3
source "$source_dir/src/testing/require_shared.sh"
shared=${PARLEY_SHARED_DIR:?}
rm -rf "$work"; mkdir -p "$work/models" "$work/audio"
check() { if ! eval "$1"; then echo "FAILED: $2" >&2; exit 1; fi; }
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/pyannote-sample/sample.wav
ln -s "$shared/models/segmentation-3.0-fp16.onnx" "$shared/models/plda" "$work/models/"
/usr/bin/python3 "$source_dir/tools/make_speed_twin.py" --output "$work/models/resnet34-speed-twin.onnx" >/dev/null
m=(--models "$work/models" --step 2)
a=$work/audio lib=$work/speakers.db
sox "$shared/eval/pyannote-sample/sample.wav" "$a/clip.wav" trim 0 20
cp "$a/clip.wav" "$a/copy.wav"
sox "$shared/eval/pyannote-sample/sample.wav" "$a/other.wav" trim 20 20

# A voiceprint from a range of a recording, and one from a speaker of a JSON result.
"$parley" voiceprint add --library "$lib" Alice "$a/clip.wav" --start 1 --end 9 "${m[@]}" -q
# Ranges that hold nothing are refused with what to give instead (audio::decode_range).
for range in "--start 30:give a start before 20.000 s" "--start 9 --end 3:give an end after the start" "--start 4 --end 4:give an end after the start"; do
  if "$parley" voiceprint add --library "$lib" Nobody "$a/clip.wav" ${range%%:*} "${m[@]}" -q 2>"$work/err"; then
    echo "FAILED: voiceprint add ${range%%:*} was taken" >&2; exit 1
  fi
  check 'grep -qF "${range#*:}" "$work/err"' "${range%%:*}: $(cat "$work/err")"
done
"$parley" diarize "$a/clip.wav" "${m[@]}" --format json -o "$work/clip.json" -q
"$parley" voiceprint add --library "$lib" Bob --from "$work/clip.json" --speaker SPEAKER_00 "${m[@]}" -q
"$parley" voiceprint list --library "$lib" >"$work/list" 2>"$work/err"
check 'grep -q "Alice.*clip.wav 1.000-9.000" "$work/list" && grep -q "Bob.*clip.json SPEAKER_00" "$work/list"' "list shows both ($(cat "$work/list"))"
check 'grep -q "2 speakers, 2 voiceprints" "$work/err"' "list counts"
"$parley" voiceprint list --library "$lib" --json | /usr/bin/python3 -c 'import json,sys; l=json.load(sys.stdin); assert [e["name"] for e in l]==["Alice","Bob"] and l[0]["embedding_mode"]=="shared" and len(l[0]["model_sha256"])==64, l'

# Bob is SPEAKER_00's own centroid: diarizing the same audio again names that cluster Bob, with
# score 1, in every format; Alice is matched only if she is the best remaining.
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --format json -o "$work/named.json" -q
/usr/bin/python3 - "$work/named.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
named = {s["label"]: s for s in d["identification"]["speakers"]}
assert named["SPEAKER_00"]["name"] == "Bob" and abs(named["SPEAKER_00"]["score"] - 1) < 1e-6, named
assert "Bob" in d["speaker_embeddings"] and "SPEAKER_00" not in d["speaker_embeddings"], d.keys()
assert any(t["speaker"] == "Bob" for t in d["diarization"])
assert not any(t["speaker"] == "SPEAKER_00" for t in d["diarization"])
assert d["identification"]["threshold"] == 0.5
PY
# The speed twin leaves SPEAKER_01 of the clip without clean speech, so with a zero centroid (as
# pyannote pads): it keeps its turns and label, is listed as unidentifiable with the reason, and
# gives no voiceprint.
/usr/bin/python3 - "$work/clip.json" "$work/named.json" <<'PY'
import json, sys
plain, named = (json.load(open(p)) for p in sys.argv[1:])
zero = sorted(k for k, v in plain["speaker_embeddings"].items() if not any(v))
assert zero == ["SPEAKER_01"], zero
listed = named["identification"]["unidentifiable"]
assert [u["label"] for u in listed] == zero, listed
assert "no clean (single-speaker) speech" in listed[0]["reason"], listed
assert any(t["speaker"] == "SPEAKER_01" for t in named["diarization"])
PY
set +e; "$parley" voiceprint add --library "$lib" Carol --from "$work/clip.json" --speaker SPEAKER_01 "${m[@]}" -q 2>"$work/err"; status=$?; set -e
check '[ $status -ne 0 ] && grep -q "SPEAKER_01 cannot give a voiceprint, no centroid" "$work/err"' "no voiceprint from a zero centroid ($(cat "$work/err"))"
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" -o "$work/named.rttm" -q
check 'grep -q " Bob " "$work/named.rttm" && ! grep -q SPEAKER_00 "$work/named.rttm"' "RTTM carries the name"
# Subtitles and text show the named speaker's score; RTTM's column 9 its confidence.
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --format txt -q | grep -q " Bob (1.00)$"
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --format srt -q | grep -qx "Bob (1.00)"
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --format vtt -q | grep -qx "Bob (1.00)"
check 'awk '"'"'$8 == "Bob" && $9 !~ /^[01]\.[0-9][0-9][0-9]$/ { bad = 1 } $8 != "Bob" && $9 != "<NA>" { bad = 1 } END { exit bad }'"'"' "$work/named.rttm"' "RTTM column 9 ($(cat "$work/named.rttm"))"
check '! "$parley" diarize "$a/clip.wav" "${m[@]}" --format srt -q | grep -q "("' "unnamed subtitles carry no score"
# A fused transcript: named with scores in its text, and its JSON has the identification.
printf '1\n00:00:00,500 --> 00:00:09,000\nhello there\n\n2\n00:00:10,000 --> 00:00:19,000\ngeneral kenobi\n\n' >"$work/words.srt"
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --transcript "$work/words.srt" --format json -q -o "$work/fused.json"
/usr/bin/python3 - "$work/fused.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["identification"]["speakers"][0]["name"] == "Bob", d.get("identification")
assert "transcript" in d and all(s["speaker"] != "SPEAKER_00" for s in d["transcript"]), d["transcript"]
PY
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --transcript "$work/words.srt" --format txt -q >"$work/fused.txt"
check '! grep -q "SPEAKER_00" "$work/fused.txt" && { ! grep -q "Bob" "$work/fused.txt" || grep -q "Bob (1.00): " "$work/fused.txt"; }' "fused text tags Bob ($(cat "$work/fused.txt"))"

# A named out-dir run records how names were written ("named_output": 2): a rerun skips it, and a
# run recorded before scores were written (no "named_output") is redone once.
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --out-dir "$work/named-dir" -q
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --out-dir "$work/named-dir" 2>"$work/err"
check 'grep -q "0 of 1 recordings diarized\|nothing diarized" "$work/err"' "named rerun skipped ($(cat "$work/err"))"
/usr/bin/python3 - "$work/named-dir/.parley/clip.rttm.json" <<'PY'
import hashlib, json, sys
path = sys.argv[1]
record = json.load(open(path))
settings = record["settings"]
fingerprint = lambda s: hashlib.sha256(json.dumps(s, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
assert settings["voiceprints"]["named_output"] == 2, settings["voiceprints"]
assert fingerprint(settings) == record["fingerprint"], "the fingerprint is not the settings' sha256"
del settings["voiceprints"]["named_output"]
record["fingerprint"] = fingerprint(settings)
json.dump(record, open(path, "w"), indent=2, ensure_ascii=False)
PY
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --out-dir "$work/named-dir" 2>"$work/err"
check 'grep -q "^1 of 1 recordings diarized" "$work/err"' "an older named record is redone ($(cat "$work/err"))"
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --out-dir "$work/named-dir" 2>"$work/err"
check 'grep -q "nothing diarized" "$work/err"' "redone once ($(cat "$work/err"))"
# A threshold above every score names nobody.
"$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$lib" --identify-threshold 0.99999 --format json -q -o "$work/strict.json"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [s["name"] for s in d["identification"]["speakers"]]==["Bob"], d["identification"]' "$work/strict.json"

# Evaluate on a labelled recording: the reference names Bob where SPEAKER_00 spoke (Carol, not
# enrolled, elsewhere). Bob's cluster scores 1 with Bob: the target trial beats every other.
sed 's/ SPEAKER_01 / Carol /' "$work/named.rttm" >"$work/reference.rttm"
printf '%s\t%s\n' "$a/clip.wav" "$work/reference.rttm" >"$work/labelled.tsv"
"$parley" voiceprint evaluate --library "$lib" --manifest "$work/labelled.tsv" "${m[@]}" --json -q >"$work/evaluation.json"
/usr/bin/python3 - "$work/evaluation.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["recordings"] == 1 and r["clusters"] >= 1 and r["target_trials"] == 1, r
assert r["nontarget_trials"] >= 1 and r["equal_error_rate"] == 0.0, r
assert r["identification_accuracy"] == 1.0, r
PY

# Export, import into another library: the same voiceprints.
"$parley" voiceprint export --library "$lib" -o "$work/export.json"
"$parley" voiceprint import --library "$work/copy.db" "$work/export.json" 2>"$work/err"
check 'grep -q "imported 2 voiceprints" "$work/err"' "import counts"
check 'cmp -s "$work/export.json" <("$parley" voiceprint export --library "$work/copy.db")' "round trip"

# A voiceprint of another model is refused, before any diarization.
sed 's/"model_sha256": "[0-9a-f]*"/"model_sha256": "'"$(printf 'f%.0s' {1..64})"'"/' "$work/export.json" >"$work/foreign.json"
"$parley" voiceprint import --library "$work/foreign.db" "$work/foreign.json" 2>/dev/null
set +e; "$parley" diarize "$a/clip.wav" "${m[@]}" --voiceprints "$work/foreign.db" -q 2>"$work/err"; status=$?; set -e
check '[ $status -ne 0 ] && grep -q "another embedding model" "$work/err"' "foreign model refused ($status: $(cat "$work/err"))"

# Rename and remove.
"$parley" voiceprint rename --library "$work/copy.db" Alice Alice_Smith 2>/dev/null
set +e; "$parley" voiceprint rename --library "$work/copy.db" Alice_Smith Bob 2>"$work/err"; status=$?; set -e
check '[ $status -ne 0 ] && grep -q "already has a speaker named Bob" "$work/err"' "rename onto a name refused"
"$parley" voiceprint remove --library "$work/copy.db" Bob 2>/dev/null
check '[ "$("$parley" voiceprint list --library "$work/copy.db" 2>/dev/null | cut -f2)" = Alice_Smith ]' "renamed and removed"
set +e; "$parley" voiceprint add --library "$lib" "Two Words" "$a/clip.wav" "${m[@]}" -q 2>"$work/err"; status=$?; set -e
check '[ $status -ne 0 ] && grep -q "one word" "$work/err"' "a name with a space refused"

# Linking: the same recording under another name links speaker by speaker.
printf '%s\n' "$a/clip.wav" "$a/copy.wav" "$a/other.wav" >"$work/list.txt"
"$parley" diarize --manifest "$work/list.txt" "${m[@]}" --link-speakers --out-dir "$work/linked" -q
check '[ -s "$work/linked/speakers.tsv" ]' "speakers table written"
check 'grep -q " GLOBAL_00 " "$work/linked/clip.rttm" && ! grep -q SPEAKER_ "$work/linked/clip.rttm"' "global labels"
# Every speaker with a centroid links to its copy; one the pipeline gave none (a zero embedding,
# as pyannote pads a cluster without clean speech) cannot be compared and keeps a label of its own.
"$parley" diarize --manifest "$work/list.txt" "${m[@]}" --link-speakers --out-dir "$work/linked-json" --format json -q
/usr/bin/python3 - "$work/linked-json" <<'PY'
import json, sys
docs = {n: json.load(open(f"{sys.argv[1]}/{n}.json")) for n in ("clip", "copy")}
links = {n: {s["label"]: s["global"] for s in d["speaker_linking"]["speakers"]} for n, d in docs.items()}
assert links["clip"].keys() == links["copy"].keys(), links
for label, global_label in links["clip"].items():
    embedding = docs["clip"]["speaker_embeddings"][global_label]
    entry = next(s for s in docs["clip"]["speaker_linking"]["speakers"] if s["label"] == label)
    if any(embedding):
        assert links["copy"][label] == global_label, (label, links)
        assert "reason" not in entry, entry
    else:
        assert links["copy"][label] != global_label, (label, links)
        assert "no clean (single-speaker) speech" in entry["reason"], entry
    assert any(t["speaker"] == global_label for t in docs["clip"]["diarization"])
PY
check 'head -1 "$work/linked/speakers.tsv" | grep -q "^label	name	recordings	speech_seconds"' "table header"
check 'grep -q "^GLOBAL_00		[23]	" "$work/linked/speakers.tsv"' "GLOBAL_00 in two or three recordings ($(cat "$work/linked/speakers.tsv"))"
# With a library, Bob (SPEAKER_00 of clip) wins over his global label in every recording.
"$parley" diarize --manifest "$work/list.txt" "${m[@]}" --link-speakers --voiceprints "$lib" --out-dir "$work/linked-named" --format json -q
check 'grep -q "^Bob	Bob	[23]	" "$work/linked-named/speakers.tsv"' "Bob named in the table ($(cat "$work/linked-named/speakers.tsv"))"
/usr/bin/python3 - "$work/linked-named" <<'PY'
import json, sys
for name in ("clip", "copy"):
    d = json.load(open(f"{sys.argv[1]}/{name}.json"))
    link = {s["label"]: s for s in d["speaker_linking"]["speakers"]}
    assert link["SPEAKER_00"]["global"] == "Bob" and link["SPEAKER_00"]["name"] == "Bob", link
    assert any(t["speaker"] == "Bob" for t in d["diarization"])
PY
# --speakers-table puts the table there, and none in the out-dir.
"$parley" diarize --manifest "$work/list.txt" "${m[@]}" --link-speakers --out-dir "$work/linked-table" --speakers-table "$work/table.tsv" -q
check '[ -s "$work/table.tsv" ] && [ ! -e "$work/linked-table/speakers.tsv" ] && [ -s "$work/linked-table/clip.rttm" ]' "table where --speakers-table says"
set +e; "$parley" diarize "$a/clip.wav" "$a/copy.wav" "${m[@]}" --link-speakers -q 2>"$work/err"; status=$?; set -e
check '[ $status -ne 0 ] && grep -q "speakers-table" "$work/err"' "linking without a place for its table refused"
echo "voiceprint command: all checks passed"
