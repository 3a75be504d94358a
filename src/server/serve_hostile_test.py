#!/usr/bin/env python3
"""CTest: `parley serve` against hostile clients and a damaged state folder, on loopback only.

  serve_hostile_test.py PARLEY WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR)

Slow and idle connections (16 of them, and over the per-client cap), malformed and oversized
lengths, chunked and gzip bodies past the upload limit, a server file swapped for a link after
the job was accepted, token files and hosts refused at start, a disk that refuses the upload, and
a job store that is empty, damaged, or holds unreadable rows; jobs that were co-running (or
cancelled) when the server was killed. Exits 77 (skipped) without the shared folder."""
import gzip
from contextlib import closing
import json
import os
import re
import resource
import select
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import wave

import onnx

from serve_test_support import (ServerProcess, check, error_of, form, prepare_models, request,
                                result, shared_folder_or_skip, wait_done)

parley, write_model, work = sys.argv[1:4]
shared = shared_folder_or_skip()
ENGINE = prepare_models(work, shared, write_model) + ["--threads", "2"]

# Short clips of the falcon test call, and a long one (9.6 MB of 16 kHz PCM16).
with wave.open(f"{shared}/eval/falcon-test/test.wav") as source:
    params = source.getparams()
    frames = source.readframes(source.getnframes())
frame_bytes = params.sampwidth * params.nchannels


def write_clip(path, start_seconds, seconds):
    start = int(start_seconds * params.framerate) * frame_bytes
    piece = frames[start:start + int(seconds * params.framerate) * frame_bytes]
    while len(piece) < int(seconds * params.framerate) * frame_bytes:
        piece += frames[:int(seconds * params.framerate) * frame_bytes - len(piece)]
    with wave.open(path, "wb") as out:
        out.setparams(params)
        out.writeframes(piece)
    return path


os.makedirs(f"{work}/clips")
clips = [write_clip(f"{work}/clips/clip{k}.wav", 0.9 * k, 4) for k in range(8)]


def upload(server, path, name=None, **fields):
    with open(path, "rb") as audio:
        body, headers = form({"audio": (name or os.path.basename(path), audio.read()), **fields})
    return request(server, "/v1/jobs", "POST", body, headers)


def connect(server):
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def raw_answer(sock, timeout):
    """The status of what the server answers on `sock` within `timeout` s (None: nothing)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return int(data.split()[1]) if data.startswith(b"HTTP/1.1 ") else None


def timed_health(server):
    started = time.time()
    status, _, _ = request(server, "/v1/health", timeout=5)
    return status, time.time() - started


def check_over_cap(server, cap):
    """With six more idle connections open (past `cap`), health answers and the rest is 503."""
    crowd = [connect(server) for _ in range(6)]
    time.sleep(0.3)
    status, seconds = timed_health(server)
    check(status == 200 and seconds < 1.0, f"health past {cap}: {status} in {seconds:.2f} s")
    # A connection the server has just answered holds its thread until the server closes it: on a
    # loaded machine the one before the crowd may still do, so the crowd overflows while a thread
    # is about to be free. One more idle connection then takes that thread (connections are taken
    # in the order they came), and the request is asked again; a server without the cap answers
    # every one.
    deadline = time.time() + 4.0
    answer = request(server, "/v1/jobs", timeout=5)
    while answer[0] != 503 and time.time() < deadline:
        crowd.append(connect(server))
        time.sleep(0.2)
        answer = request(server, "/v1/jobs", timeout=5)
    check(answer[0] == 503, f"past {cap}: answered {answer[0]} {answer[2][:200]!r}")
    status, error = error_of(answer)
    check(status == 503 and error["code"] == "too_many_connections",
          f"past {cap}: {status} {error}")
    for sock in crowd:
        sock.close()
    time.sleep(0.5)


allowed = f"{work}/allowed"
outside = f"{work}/outside"
os.makedirs(f"{allowed}/race")
os.makedirs(outside)
shutil.copy(clips[0], f"{allowed}/race/inside.wav")
shutil.copy(clips[5], f"{outside}/inside.wav")
state = f"{work}/state"
server = ServerProcess(parley, ENGINE, state, "--max-upload-mb", "1", "--read-timeout", "2",
                       "--max-client-connections", "20", "--allow-paths", allowed, "--jobs", "1",
                       # Done jobs are made to run again below (as if they had been running).
                       "--keep-uploads")

# --- S5: 16 slow clients (idle, half a request line and headers, a body that stalls) hold
# connections; /v1/health still answers at once.
slow = []
for k in range(16):
    sock = connect(server)
    if k % 4 == 1:
        sock.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n")
    elif k % 4 == 2:
        sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n"
                     b"Content-Type: multipart/form-data; boundary=b\r\n\r\n--b\r\n")
    elif k % 4 == 3:
        sock.sendall(b"G")
    slow.append(sock)
time.sleep(0.3)
status, seconds = timed_health(server)
check(status == 200 and seconds < 1.0, f"health beside 16 slow clients: {status} in {seconds:.2f} s")
# Past the cap of 20 connections from one address, a connection is answered for /v1/health only.
check_over_cap(server, "--max-client-connections")
for sock in slow:
    sock.close()
time.sleep(0.5)
check(request(server, "/v1/jobs")[0] == 200, "served again once the slow clients left")
# One access log line per request: address, method, path, status, size.
check(re.search(r"127\.0\.0\.1 GET /v1/jobs 200 \d+", open(server.log_path).read()),
      "the access log has the request")

# A length that is no length is refused at once, as is one past the limit; one longer than the
# body is given up after --read-timeout (2 s), not 120 s.
for length, want in (("-1", 400), ("1e20", 400), ("18446744073709551616", 400),
                     ("9223372036854775808", 413), ("104857600", 413), ("12, 12", 400)):
    sock = connect(server)
    started = time.time()
    sock.sendall(f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n"
                 "Content-Type: multipart/form-data; boundary=b\r\n\r\n".encode())
    status = raw_answer(sock, 3)
    check(status == want and time.time() - started < 1.0,
          f"Content-Length {length}: {status} after {time.time() - started:.2f} s")
    sock.close()
sock = connect(server)
started = time.time()
sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
             b"Content-Type: multipart/form-data; boundary=b\r\n\r\n--b\r\n")
status = raw_answer(sock, 10)
check(status == 400 and time.time() - started < 5, f"a body shorter than its length: {status} "
      f"after {time.time() - started:.1f} s")
sock.close()
# Headers that never end are cut at --header-timeout's bound of bytes or time.
sock = connect(server)
try:
    for _ in range(200):
        sock.sendall(b"X-Padding: " + b"y" * 1000 + b"\r\n")
except OSError:
    pass
check(raw_answer(sock, 5) in (400, None), "endless headers are cut")
sock.close()

# --- S4: a chunked upload past --max-upload-mb (1 MiB) is refused when the recording passes
# the limit, not read whole first.
sock = connect(server)
sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
             b"Content-Type: multipart/form-data; boundary=b\r\n\r\n")
head = (b'--b\r\nContent-Disposition: form-data; name="audio"; filename="big.wav"\r\n\r\n')
sock.sendall(b"%x\r\n%s\r\n" % (len(head), head))
megabyte = b"\0" * (1 << 20)
sent = 0
status = None
while sent < (64 << 20):
    if select.select([sock], [], [], 0)[0]:
        break
    try:
        sock.sendall(b"%x\r\n%s\r\n" % (len(megabyte), megabyte))
    except OSError:
        break
    sent += len(megabyte)
status = raw_answer(sock, 3)
check(status == 413 and sent <= (16 << 20), f"chunked upload: {status} after {sent >> 20} MiB sent")
sock.close()
# A gzip body is bounded after it is inflated: 64 MiB of audio in 64 KiB.
bomb, headers = form({"audio": ("bomb.wav", b"\0" * (64 << 20))})
headers["Content-Encoding"] = "gzip"
status, error = error_of(request(server, "/v1/jobs", "POST", gzip.compress(bomb), headers))
check(status == 413 and error["code"] == "too_large", f"gzip bomb: {status} {error}")
check(request(server, "/v1/health")[0] == 200, "the server is well after the large bodies")

# Form fields are typed by the option table, with its grammar and messages: a checkbox's "on"
# is true; an empty field is refused rather than taken for false.
status, _, answer = upload(server, clips[7], exclusive="on")
check(status == 202, f"exclusive=on: {status} {answer!r}")
wait_done(server, json.loads(answer)["id"])
for fields, message in (({"exclusive": "maybe"}, "exclusive: expected true or false (got 'maybe')"),
                        ({"exclusive": ""}, "exclusive: expected true or false (got '')"),
                        ({"step": "abc"}, "step: expects a number (got 'abc')"),
                        ({"num_speakers": "0"}, "num_speakers: must be 1 to 1000 (got 0)")):
    status, error = error_of(upload(server, clips[7], **fields))
    check(status == 422 and error["code"] == "invalid_option" and error["message"] == message,
          f"{fields}: {status} {error}")

# --- S3: a server file swapped for a link to outside the allowed folder after the 202. The job
# waits behind others, so the swap comes before it runs: it fails (or, had it been opened
# already, diarizes the file that was inside), and never reads the outside file.
reference = [json.loads(upload(server, clips[0], "inside.wav")[2])["id"]]
inside_rttm = result(server, wait_done(server, reference[0])["id"])
outside_id = json.loads(upload(server, clips[5], "inside.wav")[2])["id"]
outside_rttm = result(server, wait_done(server, outside_id)["id"])
check(inside_rttm != outside_rttm, "the two files diarize differently")
ahead = [json.loads(upload(server, path)[2])["id"] for path in clips[1:5] * 2]
body, headers = form({"path": "race/inside.wav"})
status, _, answer = request(server, "/v1/jobs", "POST", body, headers)
check(status == 202, f"allowed path: {status} {answer!r}")
race = json.loads(answer)["id"]
os.rename(f"{allowed}/race", f"{allowed}/race-before")
os.symlink(outside, f"{allowed}/race")
job = wait_done(server, race)
if job["state"] == "done":
    check(result(server, race) == inside_rttm, "the swapped job diarized the file that was inside")
else:
    check(job["state"] == "failed" and "outside the allowed folder" in job["error"] and
          work not in job["error"], f"the swapped job: {job}")
for job_id in ahead:
    wait_done(server, job_id)

# A failed job's result says why there is none (serve_test checks a cancelled job's).
if job["state"] == "failed":
    status, error = error_of(request(server, f"/v1/jobs/{race}/result"))
    check(status == 409 and error["code"] == "failed" and "outside" in error["message"],
          f"a failed job's result: {status} {error}")
check(server.stop() == 0, "SIGTERM exits 0")

# --- L5: the server died twice while three jobs were in the networks together: none is blamed,
# each runs alone and finishes. A running job whose cancellation was asked is cancelled, not run
# again.
co_running = ahead[:3]
cancelled = ahead[3]
with closing(sqlite3.connect(f"{state}/jobs.sqlite3")) as db, db:
    db.executemany("UPDATE jobs SET state = 'running', attempts = 2 WHERE id = ?",
                   [(job_id,) for job_id in co_running])
    db.execute("UPDATE jobs SET state = 'running', attempts = 1, cancel_requested = 1 WHERE id = ?",
               (cancelled,))
# --- L4: rows the server cannot read (an unknown state, options that are not JSON, a speaker
# count that is text) are quarantined alone; the rest is served and the queue goes on.
bad_rows = ahead[4:7]
with closing(sqlite3.connect(f"{state}/jobs.sqlite3")) as db, db:
    db.execute("UPDATE jobs SET state = 'exploded' WHERE id = ?", (bad_rows[0],))
    db.execute("UPDATE jobs SET options = '{not json' WHERE id = ?", (bad_rows[1],))
    db.execute("UPDATE jobs SET state = 'queued', options = '{\"num_speakers\": \"two\"}' "
               "WHERE id = ?", (bad_rows[2],))
server.start()
for job_id in co_running:
    job = wait_done(server, job_id)
    check(job["state"] == "done" and job["attempts"] == 3, f"a co-running job is not failed: {job}")
job = wait_done(server, cancelled)
check(job["state"] == "cancelled" and job["attempts"] == 1, f"cancelled, not run again: {job}")
status, _, body = request(server, "/v1/jobs?limit=1000")
listed = {job["id"] for job in json.loads(body)["jobs"]}
check(status == 200 and not listed & set(bad_rows) and set(co_running) <= listed,
      f"the others are listed: {status}")
for path in ("/v1/health", "/metrics", f"/v1/jobs/{bad_rows[0]}"):
    check(request(server, path)[0] in (200, 404), f"{path} after quarantine")
check("quarantined_jobs" in open(server.log_path).read(), "the log says what was quarantined")
status, _, body = upload(server, clips[6])
check(status == 202 and wait_done(server, json.loads(body)["id"])["state"] == "done",
      "the queue goes on after the quarantine")
with closing(sqlite3.connect(f"{state}/jobs.sqlite3")) as db, db:
    check(db.execute("SELECT COUNT(*) FROM quarantined_jobs").fetchone()[0] == 3,
          "three rows in quarantine")
check(server.stop() == 0, "SIGTERM exits 0")

# An empty database beside job folders, and a damaged one, are refused at start with a message.
shutil.copy(f"{state}/jobs.sqlite3", f"{work}/jobs.sqlite3.good")
check(not os.path.exists(f"{state}/jobs.sqlite3-wal"), "a clean stop leaves no WAL")
for damage, words in (("empty", "0 bytes"), ("header", "restore"), ("page", "restore")):
    for stale in ("-wal", "-shm"):
        if os.path.exists(f"{state}/jobs.sqlite3{stale}"):
            os.remove(f"{state}/jobs.sqlite3{stale}")
    with open(f"{state}/jobs.sqlite3", "r+b") as db:
        if damage == "empty":
            db.truncate(0)
        elif damage == "header":
            db.write(b"x" * 16)
        else:
            db.seek(4096)
            db.write(os.urandom(4096))
    text = server.start(expect_exit=True)
    check(text is not None and words in text and server.process.returncode != 0,
          f"{damage} database refused at start: {text}")
    shutil.copy(f"{work}/jobs.sqlite3.good", f"{state}/jobs.sqlite3")

# --- S6: a token file that is not a regular file, or whose line has no end, and a host beyond
# loopback without a token, are refused before anything listens.
with open(f"{work}/long-token", "wb") as token:
    token.write(b"t" * (1 << 20))
for flags, words in ((["--token-file", "/dev/zero"], "not a regular file"),
                     (["--token-file", f"{work}/long-token"], "longer than"),
                     (["--host", "0.0.0.0"], "--insecure")):
    finished = subprocess.run([parley, "serve", "--state-dir", f"{work}/state-s6", "--port", "0",
                               *ENGINE, *flags], capture_output=True, text=True, timeout=60)
    check(finished.returncode != 0 and words in finished.stderr,
          f"{flags}: {finished.returncode} {finished.stderr}")

# --- A full disk (here a file-size limit of 8 MiB) answers 507 without the server's paths, and
# the server goes on.
long_clip = write_clip(f"{work}/clips/long.wav", 0, 300)
file_limit = 8 << 20
# This server's embedding model is marked as a speed twin (random weights): health, every job
# and the page say so.
twin_model = f"{work}/models/twin-embedding.onnx"
marked = onnx.load(ENGINE[ENGINE.index("--embedding-model") + 1])
marked.metadata_props.add(key="parley.speed_twin", value="true")
onnx.save(marked, twin_model)
twin_engine = [twin_model if flag.endswith("tiny-embedding.onnx") else flag for flag in ENGINE]
limited = ServerProcess(parley, twin_engine, f"{work}/state-full", "--retain", "0.0001",
                        "--max-connections", "4",
                        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                              (file_limit, file_limit)))
health = json.loads(request(limited, "/v1/health")[2])
check("speed twin" in health.get("warning", ""), f"health warns of the speed twin: {health}")
# Past --max-connections (4 here), connections are answered for /v1/health only.
check_over_cap(limited, "--max-connections")
status, error = error_of(upload(limited, long_clip))
check(status == 507 and error["code"] == "insufficient_storage" and work not in error["message"],
      f"full disk: {status} {error}")
status, _, body = upload(limited, clips[7])
small = json.loads(body)["id"]
check(status == 202 and wait_done(limited, small)["state"] == "done", "a small upload still runs")
# Its upload is gone once it is done; its results stay (until --retain).
left = os.listdir(f"{work}/state-full/jobs/{small}")
check("result.rttm" in left and not any(name.startswith("audio") for name in left),
      f"the upload is removed after the result: {left}")

# --- The progress moves while a recording is in the networks (200 s of audio), instead of
# staying at the 0.15 the networks start at.
status, _, body = upload(limited, write_clip(f"{work}/clips/long200.wav", 0, 200))
check(status == 202, f"200 s upload: {status}")
job_id = json.loads(body)["id"]
seen = set()
deadline = time.time() + 120
while time.time() < deadline:
    job = json.loads(request(limited, f"/v1/jobs/{job_id}")[2])
    if job["state"] not in ("queued", "running"):
        break
    if job["state"] == "running":
        seen.add(round(job["progress"], 3))
    time.sleep(0.01)
check(job["state"] == "done" and any(0.15 < progress < 0.85 for progress in seen),
      f"progress in the networks: {sorted(seen)}")
check("speed twin" in job.get("warning", ""), f"the job warns of the speed twin: {job}")
# --retain 0.0001 (8.6 s): finished jobs go, rows and folders.
deadline = time.time() + 30
while time.time() < deadline and (request(limited, f"/v1/jobs/{small}")[0] != 404 or
                                  request(limited, f"/v1/jobs/{job_id}")[0] != 404):
    time.sleep(0.5)
check(request(limited, f"/v1/jobs/{job_id}")[0] == 404 and
      not os.path.exists(f"{work}/state-full/jobs/{small}"), "finished jobs go after --retain")
check(limited.stop() == 0, "SIGTERM exits 0")
print("serve hostile test passed")
