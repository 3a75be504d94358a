#!/usr/bin/env bash
# CTest: `parley stream` as a user runs it (docs/live.md).
#   stream_command_test.sh PARLEY SOURCE_DIR WORK_DIR   (PARLEY_SHARED_DIR: the shared data)
# Usage errors first (no models needed); then, with the shared folder, a recording streamed with
# --final-recluster, whose RTTM must be `parley diarize`'s turn for turn under the live names.
set -euo pipefail
parley=$1 source_dir=$2 work=$3
rm -rf "$work"; mkdir -p "$work/models"
check() { if ! eval "$1"; then echo "FAILED: $2" >&2; exit 1; fi; }

# Standard input is WAV, or raw PCM with --raw; --format takes sample or output formats; bounds in
# the flags.
status=0; "$parley" stream - </dev/null 2>"$work/err" || status=$?
check '[ "$status" -ne 0 ] && grep -q -- "not start with a WAV header.*--raw" "$work/err"' \
  "stdin that is not WAV, without --raw"
status=0; "$parley" stream - --raw --format mp3 </dev/null 2>"$work/err" || status=$?
check '[ "$status" -ne 0 ] && grep -q "s16le or f32le" "$work/err"' "unknown --format"
status=0; "$parley" stream x.wav --latency 9 2>"$work/err" || status=$?
check '[ "$status" -eq 2 ] && grep -q -- "--latency" "$work/err"' "--latency out of range"
status=0; "$parley" stream x.wav --stream-embedding fast 2>"$work/err" || status=$?
check '[ "$status" -eq 2 ] && grep -q -- "--stream-embedding" "$work/err"' "unknown --stream-embedding"
# Library messages name the config fields; the command names its flags.
status=0; "$parley" stream x.wav --latency 0.5 --step 1 2>"$work/err" || status=$?
check '[ "$status" -ne 0 ] && grep -q -- "--latency (0.5) must be at least --step (1)" "$work/err" && ! grep -q "_seconds" "$work/err"' \
  "latency below the step, in flag names"
# Flags that would be ignored are refused: raw-PCM flags on a decoded file, the batch clustering
# without --final-recluster, -o - (standard output carries the events).
for flags in "--rate 8000" "--channels 2" "--format s16le"; do
  status=0; "$parley" stream x.wav $flags 2>"$work/err" || status=$?
  check '[ "$status" -ne 0 ] && grep -q -- "add --raw" "$work/err"' "$flags without --raw"
done
for flags in "--num-speakers 2" "--min-speakers 2" "--clustering ahc" "--ahc-threshold 0.5"; do
  status=0; "$parley" stream x.wav $flags 2>"$work/err" || status=$?
  check '[ "$status" -ne 0 ] && grep -q -- "only with --final-recluster" "$work/err"' "$flags without --final-recluster"
done
# Without -o the batch diarization would be thrown away: refused before any model loads.
status=0; "$parley" stream x.wav --final-recluster 2>"$work/err" || status=$?
check '[ "$status" -ne 0 ] && grep -q -- "--final-recluster writes .* only to the -o file" "$work/err"' \
  "--final-recluster without -o refused"
status=0; "$parley" stream x.wav -o - 2>"$work/err" || status=$?
check '[ "$status" -ne 0 ] && grep -q -- "standard output carries the events" "$work/err"' "-o - refused"
"$parley" stream --help >"$work/help"
check 'grep -q -- "with --final-recluster only: exact number of speakers" "$work/help"' "--help says what only --final-recluster reads"

source "$source_dir/src/testing/require_shared.sh"
shared=${PARLEY_SHARED_DIR:?}
require_shared models/segmentation-3.0-fp16.onnx models/plda eval/falcon-test/test.wav
ln -s "$shared/models/segmentation-3.0-fp16.onnx" "$shared/models/plda" "$work/models/"
/usr/bin/python3 "$source_dir/tools/make_speed_twin.py" --output "$work/models/resnet34-speed-twin.onnx" >/dev/null
recording=$shared/eval/falcon-test/test.wav

"$parley" stream "$recording" --models "$work/models" --threads 2 --step 2 --final-recluster \
  -o "$work/stream.rttm" >"$work/events.jsonl" 2>"$work/stderr"
check '[ -s "$work/events.jsonl" ]' "events on standard output"
check '/usr/bin/python3 -c "
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert e[\"type\"] in (\"turn_start\", \"turn_end\") and e[\"speaker\"].startswith(\"SPEAKER_\")
" "$work/events.jsonl"' "events are JSON lines of final turns"
check 'grep -q "speakers" "$work/stderr"' "summary on standard error"
# The trunk kept between steps by default (shared embedding mode, a step of whole 10 ms); at a
# step off the fbank grid, rolling says why it cannot run.
"$parley" stream "$recording" --models "$work/models" --threads 2 --step 2 -v \
  >/dev/null 2>"$work/verbose"
check 'grep -q "stream embedding: rolling" "$work/verbose"' "rolling by default"
status=0; "$parley" stream "$recording" --models "$work/models" --step 0.3333 --latency 1 \
  --stream-embedding rolling >/dev/null 2>"$work/err" || status=$?
check '[ "$status" -ne 0 ] && grep -q "10 ms" "$work/err"' "rolling refused off the fbank grid"
# -q leaves only the speed-twin notice on standard error, as `parley diarize -q` does.
"$parley" stream "$recording" --models "$work/models" --threads 2 --step 2 -q >/dev/null 2>"$work/quiet"
check '[ -z "$(grep -v "^!!!!\|speed twin with random weights" "$work/quiet")" ] && grep -q "speed twin" "$work/quiet"' \
  "-q: nothing but the speed-twin notice"

# Raw PCM of any shape, and WAV from a pipe, give the events of the same audio read as a file.
# The recording at 8 kHz in stereo (every other sample; the right channel at half the left):
# as a WAV file (decoded: downmix, then resampling), as raw f32le with --rate/--channels/--format,
# and as WAV on standard input, as ffmpeg writes it to a pipe (sizes 0xFFFFFFFF, a LIST chunk
# before the data) and as `cat` of the file (exact sizes).
/usr/bin/python3 - "$recording" "$work" <<"PY"
import array, struct, sys, wave
recording, work = sys.argv[1], sys.argv[2]
with wave.open(recording) as audio:
    mono = array.array("h", audio.readframes(audio.getnframes()))[::2]
stereo = array.array("h")
for value in mono:
    stereo.extend((value, value // 2))
with wave.open(f"{work}/stereo8k.wav", "wb") as out:
    out.setnchannels(2); out.setsampwidth(2); out.setframerate(8000)
    out.writeframes(stereo.tobytes())
with open(f"{work}/stereo8k.f32", "wb") as out:
    out.write(array.array("f", (value / 32768.0 for value in stereo)).tobytes())
fmt = struct.pack("<HHIIHH", 1, 2, 8000, 8000 * 4, 4, 16)
header = (b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + b"LIST" + struct.pack("<I", 5)
          + b"INFOx\0" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data"
          + struct.pack("<I", 0xFFFFFFFF))
with open(f"{work}/piped.wav", "wb") as out:
    out.write(header + stereo.tobytes())
PY
decisions() { /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    event = json.loads(line); event.pop("latency"); print(json.dumps(event, sort_keys=True))
' "$1"; }
live_flags=(--models "$work/models" --threads 2 --step 2)
"$parley" stream "$work/stereo8k.wav" "${live_flags[@]}" -q >"$work/file.jsonl"
check '[ "$(grep -c turn_end "$work/file.jsonl")" -gt 0 ]' "the 8 kHz stereo file gives turns"
"$parley" stream "$work/stereo8k.f32" --raw --rate 8000 --channels 2 --format f32le \
  "${live_flags[@]}" -q >"$work/raw.jsonl"
check '[ "$(decisions "$work/raw.jsonl")" = "$(decisions "$work/file.jsonl")" ]' \
  "raw f32le stereo at 8 kHz gives the WAV file's events"
"$parley" stream - "${live_flags[@]}" -q <"$work/piped.wav" >"$work/piped.jsonl"
check '[ "$(decisions "$work/piped.jsonl")" = "$(decisions "$work/file.jsonl")" ]' \
  "WAV piped as ffmpeg writes it gives the file's events"
cat "$work/stereo8k.wav" | "$parley" stream - "${live_flags[@]}" -q >"$work/cat.jsonl"
check '[ "$(decisions "$work/cat.jsonl")" = "$(decisions "$work/file.jsonl")" ]' \
  "WAV on standard input gives the file's events"
# A NaN in raw f32le is refused, as the WebSocket refuses it (one rule: stream/pcm_input.h).
/usr/bin/python3 -c '
import struct, sys
sys.stdout.buffer.write(struct.pack("<8000f", *([0.0] * 4000 + [float("nan")] + [0.0] * 3999)))
' >"$work/nan.f32"
status=0; "$parley" stream "$work/nan.f32" --raw --format f32le "${live_flags[@]}" -q \
  >/dev/null 2>"$work/err" || status=$?
check '[ "$status" -eq 1 ] && grep -q "nan.f32: f32le audio holds a sample that is not a number" "$work/err"' \
  "a NaN in raw f32le is refused"
# A WAV stream of a sample format not read from a pipe says what to send.
/usr/bin/python3 -c '
import struct, sys
fmt = struct.pack("<HHIIHH", 1, 1, 16000, 48000, 3, 24)
sys.stdout.buffer.write(b"RIFF" + struct.pack("<I", 0) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
                        + b"data" + struct.pack("<I", 0) + bytes(300))
' >"$work/s24.wav"
status=0; "$parley" stream - "${live_flags[@]}" <"$work/s24.wav" >/dev/null 2>"$work/err" || status=$?
check '[ "$status" -eq 1 ] && grep -q "24-bit samples is not read from a pipe" "$work/err"' \
  "24-bit WAV on standard input is refused with what to send"

# --realtime paces the input: 4 s of audio take at least 4 s from the first read, and a final
# event's latency counts from its audio's nominal arrival, so it is never under the setting
# (less the 20 ms of a block).
head -c $((44 + 4 * 32000)) "$recording" | tail -c $((4 * 32000)) >"$work/four.pcm"
check '/usr/bin/python3 - "$parley" "$work" <<"PY"
import json, subprocess, sys, time
parley, work = sys.argv[1], sys.argv[2]
run = subprocess.Popen([parley, "stream", work + "/four.pcm", "--raw", "--realtime", "--latency", "0.5",
                        "--models", work + "/models", "--threads", "2", "-v"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
began = None
for line in run.stderr:
    if "stream embedding:" in line:
        began = time.monotonic()
out = run.stdout.read()
assert run.wait() == 0 and began is not None
took = time.monotonic() - began
assert took >= 3.9, f"4 s of audio streamed in {took:.2f} s with --realtime"
events = [json.loads(l) for l in out.splitlines()]
live = [e for e in events if e["audio_time"] < 4.0]
assert live, out
assert all(e["latency"] >= 0.48 for e in live), out
PY' "--realtime paces, latencies at least the setting"

# SIGINT ends a live source as its end would: the turns so far in the -o file, open turns closed.
# The source: 12 s of the recording at once, then a trickle that never ends.
producer() {
  /usr/bin/python3 -c "
import sys, time
pcm = open(sys.argv[1], \"rb\").read()[44:]
try:
    sys.stdout.buffer.write(pcm[:12 * 32000]); sys.stdout.flush()
    while True:
        sys.stdout.buffer.write(bytes(320)); sys.stdout.flush(); time.sleep(0.5)
except BrokenPipeError:
    pass
" "$recording"
}
set -m  # a job of its own: a background job of a script would ignore SIGINT
producer | "$parley" stream - --raw --models "$work/models" --threads 2 -o "$work/interrupted.rttm" \
  >"$work/interrupted.jsonl" 2>"$work/interrupted.err" &
pid=$!
set +m
for _ in $(seq 1 240); do
  grep -q turn_end "$work/interrupted.jsonl" 2>/dev/null && break
  sleep 0.5
done
kill -INT "$pid"
status=0; wait "$pid" || status=$?
check '[ "$status" -eq 0 ]' "SIGINT: exit status 0 (got $status)"
check '[ -s "$work/interrupted.rttm" ]' "SIGINT: the RTTM is written"
check '[ "$(wc -l <"$work/interrupted.rttm")" -eq "$(grep -c turn_end "$work/interrupted.jsonl")" ]' \
  "SIGINT: the RTTM has the turns of the turn_end events"
check '[ "$(grep -c turn_start "$work/interrupted.jsonl")" -eq "$(grep -c turn_end "$work/interrupted.jsonl")" ]' \
  "SIGINT: every open turn is closed"

"$parley" diarize "$recording" --models "$work/models" --threads 2 --quiet >"$work/diarize.rttm"
# Same turns (columns 4 and 5), and each batch speaker under one live name throughout.
check '[ "$(cut -d" " -f4,5 "$work/stream.rttm")" = "$(cut -d" " -f4,5 "$work/diarize.rttm")" ]' \
  "final-recluster turns equal diarize's"
check '[ "$(paste -d" " <(cut -d" " -f8 "$work/diarize.rttm") <(cut -d" " -f8 "$work/stream.rttm") | sort -u | cut -d" " -f1 | uniq -d)" = "" ]' \
  "one live name per batch speaker"
# The archive is batch output: the JSON's speakers (its turns' labels, 00 .. n-1 without a gap,
# and its embedding rows) are as many as `parley diarize` finds.
"$parley" stream "$recording" --models "$work/models" --threads 2 --step 2 --final-recluster \
  --format json -o "$work/stream.json" -q >/dev/null 2>&1
check '/usr/bin/python3 -c "
import json, sys
archive = json.load(open(sys.argv[1]))
batch = {line.split()[7] for line in open(sys.argv[2])}
labels = {t[\"speaker\"] for t in archive[\"diarization\"]}
assert labels == {\"SPEAKER_%02d\" % i for i in range(len(batch))}, (labels, batch)
assert set(archive[\"speaker_embeddings\"]) == labels, (list(archive[\"speaker_embeddings\"]), batch)
" "$work/stream.json" "$work/diarize.rttm"' "final-recluster JSON: diarize's speaker count"
echo "stream_command_test: ok"
