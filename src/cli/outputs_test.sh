#!/usr/bin/env bash
# CTest: how the commands write their outputs (docs/reliability.md, "How outputs are written"):
# /dev/stdout, /proc/self/fd/1, a FIFO, a character device and a link are written, never
# replaced; a replaced file keeps its mode; a read-only file needs --force; every destination
# and option mistake fails before any model loads; a failed recognizer or transcript keeps the
# diarization without overwriting a file the user did not name.
#   outputs_test.sh PARLEY SOURCE_DIR WORK_DIR   (PARLEY_SHARED_DIR: the shared data)
# The first part needs nothing; the diarizations at the end skip (exit 77) without the shared
# folder.
set -euo pipefail
parley=$1 source_dir=$2 work=$3
source "$source_dir/src/testing/require_shared.sh"
rm -rf "$work"; mkdir -p "$work/empty-models" "$work/empty-home"
check() { if ! eval "$1"; then echo "FAILED: $2" >&2; exit 1; fi; }
# Runs parley with stdout and stderr to $work/out and $work/err, its exit status in $status,
# and no models but those --models names: a check that did not come before the models load
# would fail on them instead.
run() {
  set +e
  HOME="$work/empty-home" XDG_CACHE_HOME= PARLEY_MODELS= "$parley" "$@" >"$work/out" 2>"$work/err"
  status=$?
  set -e
}

printf 'SPEAKER talk 1 0.000 2.000 <NA> <NA> alice <NA> <NA>\nSPEAKER talk 1 2.000 3.000 <NA> <NA> bob <NA> <NA>\n' >"$work/talk.rttm"
printf '1\n00:00:00,100 --> 00:00:01,800\nHello Bob.\n\n2\n00:00:02,200 --> 00:00:04,000\nHi Alice.\n' >"$work/talk.srt"
fuse() { "$parley" fuse --transcript "$work/talk.srt" --rttm "$work/talk.rttm" --format srt "$@"; }
fuse >"$work/expected.srt"
check '[ -s "$work/expected.srt" ]' "fuse to standard output"

# /dev/stdout and /proc/self/fd/1 are the process's standard output, a file or a pipe alike.
fuse --out /dev/stdout >"$work/stdout.srt"
check 'cmp -s "$work/expected.srt" "$work/stdout.srt"' "--out /dev/stdout into a file"
fuse --out /proc/self/fd/1 | cat >"$work/piped.srt"
check 'cmp -s "$work/expected.srt" "$work/piped.srt"' "--out /proc/self/fd/1 into a pipe"
fuse --out /dev/stdout | cat >"$work/piped2.srt"
check 'cmp -s "$work/expected.srt" "$work/piped2.srt"' "--out /dev/stdout into a pipe"

# A FIFO's reader gets the output (it got 0 bytes when the FIFO was replaced).
mkfifo "$work/turns.fifo"
cat "$work/turns.fifo" >"$work/from-fifo.srt" & reader=$!
fuse --out "$work/turns.fifo"
wait "$reader"
check 'cmp -s "$work/expected.srt" "$work/from-fifo.srt" && [ -p "$work/turns.fifo" ]' "FIFO written in place"

# A link is followed: its file is written and the link stays.
mkdir "$work/real"; echo old >"$work/real/target.srt"
ln -s real/target.srt "$work/link.srt"
fuse --out "$work/link.srt"
check '[ -L "$work/link.srt" ] && [ "$(readlink "$work/link.srt")" = real/target.srt ] && cmp -s "$work/expected.srt" "$work/real/target.srt"' "link followed and kept"

# A character device stays one (as root, -o /dev/null replaced the system's /dev/null).
if [ "$(id -u)" -eq 0 ] && mknod -m 666 "$work/mynull" c 1 3 2>/dev/null; then
  fuse --out "$work/mynull"
  check '[ -c "$work/mynull" ]' "character device written, not replaced"
  # A link to a device: the device is written through the link, and both stay as they were.
  ln -s mynull "$work/link-to-null"
  fuse --out "$work/link-to-null"
  check '[ -L "$work/link-to-null" ] && [ -c "$work/mynull" ]' "link to a device followed, both kept"
fi

# A replaced file keeps its mode; a read-only one is refused unless --force, and stays read-only.
echo old >"$work/private.srt"; chmod 600 "$work/private.srt"
fuse --out "$work/private.srt"
check '[ "$(stat -c %a "$work/private.srt")" = 600 ] && cmp -s "$work/expected.srt" "$work/private.srt"' "mode 0600 kept"
echo reference >"$work/readonly.srt"; chmod 444 "$work/readonly.srt"
set +e; fuse --out "$work/readonly.srt" 2>"$work/err"; status=$?; set -e
check '[ $status -eq 1 ] && grep -q "read-only (mode 0444).*--force" "$work/err" && [ "$(cat "$work/readonly.srt")" = reference ]' "read-only file refused"
fuse --out "$work/readonly.srt" --force
check 'cmp -s "$work/expected.srt" "$work/readonly.srt" && [ "$(stat -c %a "$work/readonly.srt")" = 444 ]' "--force replaces it, still 0444"
set +e; fuse --out "$work/no-such-folder/x.srt" 2>"$work/err"; status=$?; set -e
check '[ $status -eq 1 ] && grep -q "the folder $work/no-such-folder does not exist" "$work/err"' "fuse --out into a missing folder"

# Usage mistakes fail before any model loads (they failed after the whole diarization).
/usr/bin/python3 - "$work/short.wav" "$work/long.wav" <<'PY'
import struct, sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(b"\0\0" * 16000)
# 31 minutes of silence as a sparse file: a header and a hole.
frames = 31 * 60 * 16000
with open(sys.argv[2], "wb") as f:
    f.write(b"RIFF" + struct.pack("<I", 36 + 2 * frames) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16) + b"data" + struct.pack("<I", 2 * frames))
    f.truncate(44 + 2 * frames)
PY
models=(--models "$work/empty-models")
# srt and vtt without a transcript are subtitles naming the speaker: the run gets as far as the
# models (none here), not refused for the format.
run diarize "$work/short.wav" --format srt "${models[@]}"
check '[ $status -ne 0 ] && ! grep -q -- "--format" "$work/err" && grep -qi "model" "$work/err"' "diarize --format srt without a transcript"
run diarize "$work/short.wav" -o "$work/nonexistent-folder/x.rttm" "${models[@]}"
check '[ $status -eq 1 ] && grep -q -- "--out $work/nonexistent-folder/x.rttm: the folder $work/nonexistent-folder does not exist" "$work/err"' "diarize -o into a missing folder"
# A folder whose permission bits allow writing but where no file can be created (/proc, for
# root too) is found before the work as well.
run diarize "$work/short.wav" -o /proc/parley-output.rttm "${models[@]}"
check '[ $status -eq 1 ] && grep -q -- "no file can be created in the folder /proc" "$work/err"' "diarize -o into /proc"
run diarize "$work/short.wav" -o "$work/readonly.srt" "${models[@]}"
check '[ $status -eq 1 ] && grep -q -- "read-only (mode 0444); make it writable, or set --force" "$work/err"' "diarize -o onto a read-only file"
run diarize "$work/short.wav" -o "$work/real" "${models[@]}"
check '[ $status -eq 1 ] && grep -q -- "it is a folder; name a file" "$work/err"' "diarize -o onto a folder"
printf '{not json' >"$work/broken.json"
run diarize "$work/short.wav" --transcript "$work/broken.json" "${models[@]}"
check '[ $status -eq 1 ] && grep -q "broken.json" "$work/err" && ! grep -q "models" "$work/err"' "a transcript that does not parse fails before the models"
run diarize "$work/short.wav" --transcript "$work/talk.srt" --format rttm "${models[@]}"
check '[ $status -eq 1 ] && grep -q -- "--format rttm has no place for words" "$work/err"' "--format rttm with a transcript"
run diarize "$work/short.wav" --save-intermediates "$work/talk.srt" "${models[@]}"
check '[ $status -eq 1 ] && grep -q -- "--save-intermediates $work/talk.srt: exists and is not a folder" "$work/err"' "--save-intermediates onto a file"
run recluster "$work/no-such-intermediates" -o "$work/nonexistent-folder/x.rttm"
check '[ $status -eq 1 ] && grep -q -- "--out $work/nonexistent-folder/x.rttm: the folder $work/nonexistent-folder does not exist" "$work/err"' "recluster -o into a missing folder"
run recluster "$work/no-such-intermediates" --format srt
check '[ $status -ne 0 ] && ! grep -q -- "--format" "$work/err" && grep -q "no-such-intermediates" "$work/err"' "recluster --format srt (subtitles naming the speaker) is no refusal"
# A recording over 30 minutes spills its samples to $TMPDIR: a missing one is named, with what
# to do, before the models load (it was "filesystem error: temp_directory_path" after them).
TMPDIR="$work/no-such-tmp" run diarize "$work/long.wav" "${models[@]}"
check '[ $status -eq 1 ] && grep -q "TMPDIR is set to .$work/no-such-tmp., which is not an existing folder: create that folder" "$work/err"' "missing TMPDIR, single recording"
TMPDIR="$work/no-such-tmp" run diarize "$work/long.wav" "$work/short.wav" "${models[@]}"
check '[ $status -eq 1 ] && grep -q "TMPDIR is set to" "$work/err"' "missing TMPDIR, several recordings"

# The rest diarizes: the shared models and recording.
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/falcon-test/test.wav \
               goldens/pyannote-community1/02_pyannote_sample/reference.rttm
shared=$PARLEY_SHARED_DIR
mkdir -p "$work/models"
ln -s "$shared/models/segmentation-3.0-fp16.onnx" "$shared/models/plda" "$work/models/"
/usr/bin/python3 "$source_dir/tools/make_speed_twin.py" --output "$work/models/resnet34-speed-twin.onnx" >/dev/null
models=(--models "$work/models")

# recluster and diarize -o /dev/stdout: the RTTM on standard output.
golden="$shared/goldens/pyannote-community1/02_pyannote_sample"
"$parley" recluster "$golden" --plda "$shared/models/plda" --uri golden -q >"$work/golden.rttm"
"$parley" recluster "$golden" --plda "$shared/models/plda" --uri golden -q -o /dev/stdout >"$work/golden-stdout.rttm"
check '[ -s "$work/golden.rttm" ] && cmp -s "$work/golden.rttm" "$work/golden-stdout.rttm"' "recluster -o /dev/stdout"
"$parley" diarize "$shared/eval/falcon-test/test.wav" "${models[@]}" -q --step 2 -o /dev/stdout 2>/dev/null | cat >"$work/diarize-stdout.rttm"
check 'grep -q "^SPEAKER test 1 " "$work/diarize-stdout.rttm"' "diarize -o /dev/stdout into a pipe"
# The issue's case: a character device made with mknod is written, not replaced by the RTTM.
if [ -c "$work/mynull" ]; then
  "$parley" diarize "$shared/eval/falcon-test/test.wav" "${models[@]}" -q --step 2 -o "$work/mynull" 2>/dev/null
  check '[ -c "$work/mynull" ]' "diarize -o onto a character device"
fi

# Several recordings: each file still to write is checked before the models load (no speed-twin
# warning, which comes just before they load, even with -q); a file finished earlier is skipped,
# read-only or not.
mkdir -p "$work/corpus/short.rttm"
run diarize "$work/short.wav" "$shared/eval/falcon-test/test.wav" --out-dir "$work/corpus" "${models[@]}" -q --step 2
check '[ $status -eq 1 ] && grep -q -- "--out-dir $work/corpus/short.rttm: it is a folder; name a file" "$work/err" && ! grep -q "speed twin" "$work/err"' "corpus destination that is a folder"
run diarize "$shared/eval/falcon-test/test.wav" --out-dir "$work/corpus" "${models[@]}" -q --step 2
check '[ $status -eq 0 ] && grep -q "^SPEAKER test 1 " "$work/corpus/test.rttm"' "corpus run"
chmod 444 "$work/corpus/test.rttm"
run diarize "$shared/eval/falcon-test/test.wav" --out-dir "$work/corpus" "${models[@]}" --step 2
check '[ $status -eq 0 ] && grep -q "1 of 1 recordings were finished by an earlier run" "$work/err"' "a read-only output finished earlier is skipped"
run diarize "$shared/eval/falcon-test/test.wav" --out-dir "$work/corpus" "${models[@]}" --step 1 -q
check '[ $status -eq 1 ] && grep -q -- "--out-dir $work/corpus/test.rttm: the file is read-only (mode 0444)" "$work/err"' "a read-only output to redo needs --force"
run diarize "$shared/eval/falcon-test/test.wav" --out-dir "$work/corpus" "${models[@]}" --step 1 -q --force
check '[ $status -eq 0 ] && [ "$(stat -c %a "$work/corpus/test.rttm")" = 444 ]' "--force redoes it, still 0444"

# A failed recognizer: the turns go to a free name; test.rttm beside the recording (a reference)
# is left as it was.
mkdir "$work/rec"; ln -s "$shared/eval/falcon-test/test.wav" "$work/rec/test.wav"
echo "reference turns" >"$work/rec/test.rttm"
(cd "$work/rec" && set +e && "$parley" diarize test.wav "${models[@]}" -q --step 2 \
  --asr-cmd "sh -c 'exit 3' {audio} {out}" >"$work/out" 2>"$work/err"; echo $? >"$work/status")
check '[ "$(cat "$work/status")" -eq 1 ] && grep -q "exit status 3; the diarization was written to test-2.rttm" "$work/err"' "failed recognizer names the free name"
check '[ "$(cat "$work/rec/test.rttm")" = "reference turns" ] && grep -q "^SPEAKER test 1 " "$work/rec/test-2.rttm"' "reference RTTM kept, turns beside it"

# A transcript that does not parse: the turns and the transcript are both kept, and the message
# names the kept transcript, not the recognizer's folder that is gone.
run diarize "$work/rec/test.wav" "${models[@]}" -q --step 2 -o "$work/rec/fused.srt" \
  --asr-cmd "sh -c 'printf \"{not json\" >\"\$0.json\"' {out} {audio}"
check '[ $status -eq 1 ] && grep -q "$work/rec/fused.transcript.json" "$work/err" && grep -q "the diarization was written to $work/rec/fused.rttm" "$work/err"' "unparsable transcript: both kept"
check '[ "$(cat "$work/rec/fused.transcript.json")" = "{not json" ] && grep -q "^SPEAKER test 1 " "$work/rec/fused.rttm" && ! grep -q "parley-asr-" "$work/err" && [ ! -e "$work/rec/fused.srt" ]' "kept files hold the turns and the transcript"
echo "how outputs are written: as documented"
