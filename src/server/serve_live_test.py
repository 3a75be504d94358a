#!/usr/bin/env python3
"""CTest: live streams over WebSocket (GET /v1/stream) of `parley serve`, with the real
segmentation model and the tiny test embedding model.

  serve_live_test.py PARLEY WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR)

A small WebSocket client of its own (RFC 6455, standard library only) streams an eval recording
as 16 kHz s16le: events arrive while it streams, the result ends the stream and matches the
turns the events announced and `parley stream` of the same file with the same settings; then
the embedding parameter (window against `parley stream --stream-embedding window`, an unknown
choice refused), max_speakers and match_threshold taking effect, auth (401, the token as query parameter and as subprotocol), the stream limit
(503), hostile frames closed with their code, a client that leaves mid-stream (the stream is
freed, the server stays healthy), and SIGTERM with streams open (close 1001, a prompt exit).
Exits 77 (skipped) without the shared folder."""
import base64
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time
import wave

from serve_test_support import (ServerProcess, check, prepare_models, request,
                                shared_folder_or_skip)

parley, write_model, work = sys.argv[1:4]
shared = shared_folder_or_skip()
recording = f"{shared}/eval/pyannote-sample/sample.wav"
check(os.path.exists(recording), f"{recording} exists")
engine = prepare_models(work, shared, write_model)
TOKEN = "live-secret"
with open(f"{work}/token", "w") as token_file:
    token_file.write(TOKEN + "\n")


def pcm_of(path):
    """The recording as 16 kHz mono s16le (ffmpeg-free: the eval WAV is already that)."""
    with wave.open(path) as audio:
        check(audio.getframerate() == 16000 and audio.getnchannels() == 1 and
              audio.getsampwidth() == 2, f"{path} is 16 kHz mono 16-bit")
        return audio.readframes(audio.getnframes())


class Client:
    """A WebSocket client: the upgrade, masked frames out, the server's frames in."""

    def __init__(self, server, query="", headers=""):
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /v1/stream{query} HTTP/1.1\r\nHost: localhost\r\n"
                           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n{headers}\r\n")
                          .encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.buffer += chunk
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        self.head = head.decode("latin-1")
        self.status = int(self.head.split(" ")[1]) if self.head else 0

    def send_frame(self, opcode, payload, fin=True, mask=True):
        header = bytes([(0x80 if fin else 0) | opcode])
        bit = 0x80 if mask else 0
        if len(payload) < 126:
            header += bytes([bit | len(payload)])
        elif len(payload) < 65536:
            header += bytes([bit | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([bit | 127]) + struct.pack(">Q", len(payload))
        if mask:
            key = os.urandom(4)
            header += key
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + payload)

    def read_frame(self):
        """(opcode, payload), or None when the connection ends."""
        def need(count):
            while len(self.buffer) < count:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return False
                self.buffer += chunk
            return True
        if not need(2):
            return None
        length = self.buffer[1] & 0x7F
        extra = {126: 2, 127: 8}.get(length, 0)
        if not need(2 + extra):
            return None
        if extra:
            length = int.from_bytes(self.buffer[2:2 + extra], "big")
        if not need(2 + extra + length):
            return None
        opcode = self.buffer[0] & 0x0F
        payload = self.buffer[2 + extra:2 + extra + length]
        self.buffer = self.buffer[2 + extra + length:]
        return opcode, payload

    def events_until_close(self):
        """The text messages as JSON, and the close code (None: no close frame)."""
        events = []
        while True:
            frame = self.read_frame()
            if frame is None:
                return events, None
            opcode, payload = frame
            if opcode == 0x1:
                events.append(json.loads(payload))
            elif opcode == 0x8:
                return events, int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005

    def close(self):
        self.sock.close()


def metric(server, name):
    status, _, body = request(server, "/metrics", token=TOKEN)
    check(status == 200, f"/metrics: {status}")
    found = re.search(rf"^{name} (\S+)$", body.decode(), re.M)
    check(found, f"/metrics has {name}")
    return float(found.group(1))


def wait_streams(server, count, timeout=10):
    deadline = time.time() + timeout
    while metric(server, "parley_live_streams") != count and time.time() < deadline:
        time.sleep(0.1)
    return metric(server, "parley_live_streams") == count


server = ServerProcess(parley, engine, f"{work}/state", "--token-file", f"{work}/token",
                       "--max-streams", "2")
try:
    pcm = pcm_of(recording)
    settings = "&latency=2&step=0.5"
    # Events while streaming, then the result.
    client = Client(server, f"?token={TOKEN}&rate=16000&format=s16le{settings}")
    check(client.status == 101, f"upgrade: {client.head}")
    chunk = 3200  # 100 ms
    half = len(pcm) // 2 // chunk * chunk
    for offset in range(0, half, chunk):
        client.send_frame(0x2, pcm[offset:offset + chunk])
    # Events come while the stream goes on, before the end is sent.
    first = client.read_frame()
    check(first and first[0] == 0x1 and json.loads(first[1])["type"].startswith("turn_"),
          f"an event while streaming: {first}")
    for offset in range(half, len(pcm), chunk):
        client.send_frame(0x2, pcm[offset:offset + chunk])
    client.send_frame(0x1, b'{"type":"finish"}')
    events, code = client.events_until_close()
    events.insert(0, json.loads(first[1]))
    client.send_frame(0x8, struct.pack(">H", 1000))
    client.close()
    check(code == 1000, f"the stream ends with close 1000 (got {code})")
    check(events and events[-1]["type"] == "result", f"the last message is the result: {events[-1:]}")
    result = events[-1]
    turns = [e for e in events[:-1] if e["type"] == "turn_end"]
    check(turns, f"turn events arrived: {[e['type'] for e in events][:10]}")
    check(all(e["type"] in ("turn_start", "turn_end", "turn_update") for e in events[:-1]),
          "only turn events before the result")
    check(abs(result["audio_seconds"] - len(pcm) / 32000) < 1e-6,
          f"audio_seconds {result['audio_seconds']}")
    announced = sorted((e["speaker"], e["start"], e["end"]) for e in turns)
    answered = sorted((t["speaker"], t["start"], t["end"]) for t in result["json"]["diarization"])
    check(announced == answered, f"the result's turns are the events' ({len(answered)} vs "
                                 f"{len(announced)})")
    rttm_lines = [line for line in result["rttm"].splitlines() if line.startswith("SPEAKER")]
    check(len(rttm_lines) == len(answered), "the RTTM has every turn")
    check(abs(metric(server, "parley_live_audio_seconds_total") - len(pcm) / 32000) < 1e-3,
          "audio seconds streamed are counted")
    # Other chunk sizes (odd ones, split mid-sample across messages is refused, so whole
    # samples), as f32le: the same decisions and the same result.
    other = Client(server, f"?token={TOKEN}&format=f32le{settings}")
    check(other.status == 101, f"upgrade: {other.head}")
    samples = struct.unpack(f"<{len(pcm) // 2}h", pcm)
    floats = struct.pack(f"<{len(samples)}f", *(value / 32768.0 for value in samples))
    for offset in range(0, len(floats), 4 * 21937):
        other.send_frame(0x2, floats[offset:offset + 4 * 21937])
    other.send_frame(0x8, struct.pack(">H", 1000))
    other_events, other_code = other.events_until_close()
    other.close()
    check(other_code == 1000, f"a close frame ends the stream too (got {other_code})")
    def decisions(stream_events):
        """The events less their wall-clock latency, without the result."""
        return [{k: v for k, v in e.items() if k != "latency"} for e in stream_events
                if e["type"] != "result"]
    check(decisions(other_events) == decisions(events),
          "the same events whatever the chunks and the sample format")
    check(other_events[-1]["rttm"] == result["rttm"], "the same result")
    # The same file through `parley stream` with the same settings: the same turns.
    rttm_path = f"{work}/cli.rttm"
    # The live clustering takes no --clustering (that is --final-recluster's).
    at = engine.index("--clustering") if "--clustering" in engine else len(engine)
    live_engine = engine[:at] + engine[at + 2:]
    printed = subprocess.run([parley, "stream", recording, *live_engine, "--latency", "2",
                              "--step", "0.5", "-o", rttm_path],
                             check=True, capture_output=True, text=True)
    cli_events = [json.loads(line) for line in printed.stdout.splitlines() if line.strip()]
    check(decisions(cli_events) == decisions(events),
          f"the served events are `parley stream`'s ({len(cli_events)} vs {len(events) - 1})")
    cli_lines = sorted(line.split()[3:5] + [line.split()[7]]
                       for line in open(rttm_path) if line.startswith("SPEAKER"))
    served_lines = sorted(line.split()[3:5] + [line.split()[7]] for line in rttm_lines)
    check(cli_lines and cli_lines == served_lines, "the served result equals `parley stream`'s")
    # The embedding parameter, as `parley stream --stream-embedding`: window's events are the
    # CLI's with the same choice; a choice that does not exist is refused before the upgrade.
    window = Client(server, f"?token={TOKEN}{settings}&embedding=window")
    check(window.status == 101, f"upgrade with embedding=window: {window.head}")
    for offset in range(0, len(pcm), 32000):
        window.send_frame(0x2, pcm[offset:offset + 32000])
    window.send_frame(0x1, b'{"type":"finish"}')
    window_events, window_code = window.events_until_close()
    window.close()
    check(window_code == 1000, f"the window stream ends with close 1000 (got {window_code})")
    printed = subprocess.run([parley, "stream", recording, *live_engine, "--latency", "2",
                              "--step", "0.5", "--stream-embedding", "window"], check=True,
                             capture_output=True, text=True)
    cli_window = [json.loads(line) for line in printed.stdout.splitlines() if line.strip()]
    check(decisions(window_events) == decisions(cli_window),
          f"embedding=window serves `parley stream --stream-embedding window`'s events "
          f"({len(window_events) - 1} vs {len(cli_window)})")
    # The live clustering's settings, as `parley stream --max-speakers --match-threshold`:
    # max_speakers=1 leaves one speaker where the defaults found several; a match threshold of 0
    # (no voice is a known speaker) makes more speakers than one of 2 (every voice is).
    # (15 s of the recording at a 2 s step: a quarter of the windows, on a busy CI machine.)
    def speakers_with(query):
        stream = Client(server, f"?token={TOKEN}&latency=2&step=2{query}")
        check(stream.status == 101, f"upgrade with {query}: {stream.head}")
        clip = pcm[:15 * 32000]
        for offset in range(0, len(clip), 32000):
            stream.send_frame(0x2, clip[offset:offset + 32000])
        stream.send_frame(0x1, b'{"type":"finish"}')
        stream_events, stream_code = stream.events_until_close()
        stream.close()
        check(stream_code == 1000 and stream_events[-1]["type"] == "result",
              f"the stream with {query} ends with its result (close {stream_code})")
        return {turn["speaker"] for turn in stream_events[-1]["json"]["diarization"]}
    default_speakers = {turn["speaker"] for turn in result["json"]["diarization"]}
    check(len(default_speakers) > 1, f"the defaults find several speakers: {default_speakers}")
    check(len(speakers_with("&max_speakers=1")) == 1, "max_speakers=1 gives one speaker")
    never, always = speakers_with("&match_threshold=0"), speakers_with("&match_threshold=2")
    check(len(never) > len(always), f"match_threshold 0 makes more speakers than 2 "
                                    f"({len(never)} vs {len(always)})")
    for query in ("&max_speakers=0", "&max_speakers=two", "&match_threshold=3"):
        check(Client(server, f"?token={TOKEN}{query}").status == 400, f"{query}: 400")

    refused = Client(server, f"?token={TOKEN}&embedding=whole")
    check(refused.status == 400, f"embedding=whole: 400 ({refused.head})")
    refused.close()

    # Auth: none, wrong, as query parameter (above), as subprotocol.
    check(Client(server).status == 401, "no token: 401")
    check(Client(server, "?token=wrong").status == 401, "a wrong token: 401")
    protocol = Client(server, "", f"Sec-WebSocket-Protocol: parley, bearer.{TOKEN}\r\n")
    check(protocol.status == 101 and "Sec-WebSocket-Protocol: parley\r\n" in protocol.head + "\r\n",
          f"token as subprotocol: {protocol.head}")
    check(TOKEN not in protocol.head, "the token is not echoed")
    # Limit: two open (this one and the next), a third is 503.
    second = Client(server, "", f"Authorization: Bearer {TOKEN}\r\n")
    check(second.status == 101, f"a second stream: {second.head}")
    third = Client(server, f"?token={TOKEN}")
    check(third.status == 503 and "Retry-After: 5" in third.head, f"over --max-streams: {third.head}")
    protocol.close()
    second.close()
    check(wait_streams(server, 0), "the streams are freed when their clients leave")
    check(Client(server, f"?token={TOKEN}&latency=abc").status == 400, "bad settings: 400")

    # Hostile frames: each closed with its code, the server unharmed.
    def code_after(send):
        hostile = Client(server, f"?token={TOKEN}")
        check(hostile.status == 101, f"upgrade: {hostile.head}")
        send(hostile)
        _, close_code = hostile.events_until_close()
        hostile.close()
        return close_code
    check(code_after(lambda c: c.send_frame(0x2, b"\0\0", mask=False)) == 1002, "unmasked: 1002")
    check(code_after(lambda c: c.sock.sendall(bytes([0x82, 0xFF]) + struct.pack(">Q", 1 << 30)
                                              + b"abcd")) == 1009, "oversize: 1009")
    check(code_after(lambda c: c.send_frame(0x3, b"x")) == 1002, "a reserved opcode: 1002")
    check(code_after(lambda c: c.send_frame(0x9, b"x", fin=False)) == 1002,
          "a fragmented ping: 1002")
    check(code_after(lambda c: c.send_frame(0x2, b"abc")) == 1007, "half a sample: 1007")
    check(wait_streams(server, 0), "hostile streams are freed")

    # A client that leaves mid-stream (mid-frame too).
    leaver = Client(server, f"?token={TOKEN}")
    leaver.send_frame(0x2, pcm[:16000 * 2 * 12])
    leaver.sock.sendall(bytes([0x82, 0xFE, 0x10, 0x00, 1, 2, 3, 4]) + b"\0" * 100)
    leaver.close()
    # (Once the 12 s it sent are diarized: a minute on a loaded 2-core machine.)
    check(wait_streams(server, 0, timeout=120), "a client leaving mid-stream frees its stream")
    status, _, _ = request(server, "/v1/health")
    check(status == 200, "health after the hostile clients")

    # SIGTERM with streams open: close 1001 to each, and a prompt exit.
    open_streams = [Client(server, f"?token={TOKEN}") for _ in range(2)]
    for stream in open_streams:
        check(stream.status == 101, f"upgrade: {stream.head}")
        stream.send_frame(0x2, pcm[:32000])
    check(wait_streams(server, 2), "two streams open")
    stopped_at = time.time()
    server.process.send_signal(15)
    for stream in open_streams:
        _, close_code = stream.events_until_close()
        check(close_code == 1001, f"close 1001 on shutdown (got {close_code})")
    status = server.process.wait(timeout=30)
    server.log.close()
    check(status == 0, f"the server exits cleanly (status {status})")
    check(time.time() - stopped_at < 10, f"the server exits promptly ({time.time() - stopped_at:.1f} s)")
finally:
    if server.process.poll() is None:
        server.process.kill()
        server.process.wait()
print("serve live test passed")
