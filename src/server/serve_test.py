#!/usr/bin/env python3
"""CTest: `parley serve` driven by real clients (urllib, curl) on a free loopback port.

  serve_test.py PARLEY WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR: the shared data)

Upload, poll and fetch (the RTTM equals `parley diarize`'s for the same file), 20 concurrent
uploads, every error class, auth, cancel, paging, health, OpenAPI, /metrics (parsed with
prometheus_client), SIGTERM, and crash safety (kill -9 mid-run, restart on the same state dir:
every job finishes once with the same result; a job that killed the server twice is failed).
The real segmentation model with the tiny test embedding model and AHC: labels are noise, every
stage runs. Exits 77 (skipped) without the shared folder."""
import concurrent.futures
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import wave

from prometheus_client.parser import text_string_to_metric_families

from serve_test_support import (ServerProcess, check, error_of, form, prepare_models, request,
                                result, shared_folder_or_skip, wait_done)

parley, write_model, work = sys.argv[1:4]
shared = shared_folder_or_skip()
for needed in ("models/segmentation-3.0-fp16.onnx", "models/plda", "eval/falcon-test/test.wav",
               "eval/pyannote-sample/sample.wav"):
    if not os.path.exists(os.path.join(shared, needed)):
        sys.exit(f"FAILED: '{needed}' not found under the shared folder {shared}")

ENGINE = prepare_models(work, shared, write_model) + ["--threads", "2"]
SAMPLE = f"{shared}/eval/pyannote-sample/sample.wav"


# 20 short recordings: 4-second pieces of the falcon test call at different offsets.
clips_dir = f"{work}/clips"
os.makedirs(clips_dir)
with wave.open(f"{shared}/eval/falcon-test/test.wav") as source:
    params = source.getparams()
    frames = source.readframes(source.getnframes())
bytes_per_frame = params.sampwidth * params.nchannels
clips = []
for k in range(20):
    start = int((0.7 * k) * params.framerate) * bytes_per_frame
    piece = frames[start:start + 4 * params.framerate * bytes_per_frame]
    path = f"{clips_dir}/clip{k:02d}.wav"
    with wave.open(path, "wb") as out:
        out.setparams(params)
        out.writeframes(piece)
    clips.append(path)

# What the CLI says for the same files.
def cli_rttm(paths):
    result = subprocess.run([parley, "diarize", *paths, *ENGINE, "-q"], check=True,
                            capture_output=True, text=True)
    by_uri = {}
    for line in result.stdout.splitlines(keepends=True):
        by_uri.setdefault(line.split()[1], []).append(line)
    return {uri: "".join(lines) for uri, lines in by_uri.items()}


expected = cli_rttm(clips)
expected.update(cli_rttm([SAMPLE]))
check(len(expected) >= 15, f"the CLI found speech in most clips ({len(expected)})")


class Server(ServerProcess):
    def __init__(self, state, *flags):
        super().__init__(parley, ENGINE, state, *flags)


def submit(server, audio_path, token=None, **fields):
    with open(audio_path, "rb") as audio:
        body, headers = form({"audio": (os.path.basename(audio_path), audio.read()), **fields})
    return request(server, "/v1/jobs", "POST", body, headers, token)


# --- A server without a token: the API, concurrency, errors, cancel, paging, metrics.
server = Server(f"{work}/state", "--max-upload-mb", "1")
status, _, body = request(server, "/v1/health")
health = json.loads(body)
check(status == 200 and health["models_loaded"] and health["settings"]["clustering"] == "ahc" and
      re.fullmatch(r"\d+\.\d+\.\d+.*", health["version"]), f"health {body!r}")
status, _, body = request(server, "/v1/openapi.json")
check(status == 200 and json.loads(body)["openapi"].startswith("3."), "openapi.json parses")
source_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(f"{source_dir}/docs/openapi.json", "rb") as document:
    check(json.loads(document.read()) == json.loads(body),
          "the served OpenAPI is docs/openapi.json (rewrite it: parley options --openapi)")
# The table's server options, each driven below; the form against an independent list of them
# and the bounds the server enforces are serve_options_test.py's.
table = json.loads(subprocess.run([parley, "options", "--json"], check=True, capture_output=True,
                                  text=True).stdout)
server_options = {option["name"]: option for option in table if option["faces"]["server"]}

# curl: upload, poll, fetch; the RTTM equals the CLI's.
accepted = json.loads(subprocess.run(
    ["curl", "-sS", "-F", f"audio=@{SAMPLE}", "-F", "clustering=ahc", f"{server.url}/v1/jobs"],
    check=True, capture_output=True).stdout)
check(accepted["url"] == f"/v1/jobs/{accepted['id']}", f"accepted {accepted}")
job = wait_done(server, accepted["id"])
check(job["state"] == "done" and abs(job["audio_seconds"] - 30.0) < 0.01, f"sample job {job}")
check(result(server, job["id"]) == expected["sample"], "sample RTTM equals the CLI's")
turns = json.loads(result(server, job["id"], "json"))
check(len(turns["diarization"]) == expected["sample"].count("\n"), "json has the same turns")
# One centroid per speaker, of the embedding model's dimension (kTestEmbeddingDim of
# src/graph/embedding_model_test_support.h for the tiny test model; 256 with the speed twin); a speaker
# the instantaneous count adds beyond the clusters gets zeros, as pyannote pads.
speakers = {turn["speaker"] for turn in turns["diarization"]}
vectors = turns.get("speaker_embeddings", {})
check(len(speakers) >= 2 and set(vectors) == speakers, f"an embedding per speaker {sorted(vectors)}")
check(all(len(vector) == 16 and all(isinstance(x, float) for x in vector)
          for vector in vectors.values()) and any(map(any, vectors.values())),
      f"speaker embeddings of the model's dimension, 16: {[len(v) for v in vectors.values()]}")
# A job's options reach its configuration as the CLI's flags reach the CLI's
# (server::job_configuration, pipeline::apply_options): max_speakers=1 is --max-speakers 1.
capped = subprocess.run([parley, "diarize", SAMPLE, *ENGINE, "-q", "--max-speakers", "1"],
                        check=True, capture_output=True, text=True).stdout
status, _, body = submit(server, SAMPLE, max_speakers="1")
check(status == 202, f"a job with max_speakers: {status} {body!r}")
capped_job = wait_done(server, json.loads(body)["id"])
check(capped_job["state"] == "done" and result(server, capped_job["id"]) == capped and
      capped != expected["sample"], "max_speakers=1 gives the CLI's --max-speakers 1 RTTM")
check(request(server, f"/v1/jobs/{capped_job['id']}", "DELETE")[0] == 204, "remove it again")
# Every server option of the table a job names is either the job's (kept in its options, which
# job_configuration applies) or, for a setting the server fixed when it started (GET /v1/health's
# settings), refused with setting_fixed unless it names the server's value; the format is the
# answer's. Each job is removed again (paging counts the others).
def other_value(option, current):
    if option["choices"]:
        return next(choice for choice in option["choices"] if choice != current)
    if option["type"] == "flag":
        return "false" if current else "true"
    if option["type"] in ("integer", "number"):
        low, high = option["minimum"], option["maximum"]
        value = high if current == low else low
        return str(int(value) if option["type"] == "integer" else value)
    sys.exit(f"FAILED: no test value for the server option {option['name']} ({option['type']})")


def typed(option, text):
    convert = {"flag": lambda text: text == "true", "integer": int, "number": float}
    return convert.get(option["type"], str)(text)


def stored_options(job_id):
    with sqlite3.connect(f"file:{work}/state/jobs.sqlite3?mode=ro", uri=True) as db:
        return json.loads(db.execute("SELECT options FROM jobs WHERE id = ?", (job_id,))
                          .fetchone()[0])


def accepted_and_removed(fields, what):
    status, _, body = submit(server, clips[0], **fields)
    check(status == 202, f"{what}: {status} {body!r}")
    job_id = json.loads(body)["id"]
    options = stored_options(job_id)
    check(wait_done(server, job_id)["state"] == "done", f"{what}: the job runs")
    check(request(server, f"/v1/jobs/{job_id}", "DELETE")[0] == 204, f"{what}: removed again")
    return options


for name, option in server_options.items():
    if name in health["settings"]:
        fixed = health["settings"][name]
        given = str(fixed)
        accepted_and_removed({name: given}, f"{name}={given}, the server's value")
        other = other_value(option, fixed)
        status, error = error_of(submit(server, clips[0], **{name: other}))
        check(status == 422 and error["code"] == "setting_fixed" and name in error["message"],
              f"{name}={other} (the server runs with {fixed}) is refused: {status} {error}")
    elif name == "format":
        for choice in option["choices"]:
            with open(clips[0], "rb") as audio:
                body, headers = form({"audio": ("clip.wav", audio.read()), name: choice})
            status, answer_headers, answer = request(server, "/v1/diarize", "POST", body,
                                                     headers)
            check(status == 200, f"format={choice} on /v1/diarize: {status} {answer!r}")
            check(request(server, answer_headers["Location"], "DELETE")[0] == 204,
                  f"format={choice}: its job removed again")
            check(choice != "json" or "diarization" in json.loads(answer),
                  f"format=json answers JSON: {answer[:80]!r}")
            check(choice != "vtt" or answer.startswith(b"WEBVTT"),
                  f"format=vtt answers WebVTT: {answer[:80]!r}")
    else:
        value = other_value(option, option["default"])
        options = accepted_and_removed({name: value}, f"{name}={value}")
        check(options.get(name) == typed(option, value),
              f"{name}={value} is the job's option: {options}")
# Every face writes every format: without a transcript srt and vtt are cues naming the speaker.
status, _, body = request(server, f"/v1/jobs/{job['id']}/result?format=srt")
check(status == 200 and b" --> " in body and b"SPEAKER_0" in body, f"srt without a transcript: {status}")
status, _, body = request(server, f"/v1/jobs/{job['id']}/result?format=vtt")
check(status == 200 and body.startswith(b"WEBVTT"), f"vtt without a transcript: {status}")
status, error = error_of(request(server, f"/v1/jobs/{job['id']}/result?format=docx"))
check(status == 422 and "docx" in error["message"], "unknown format: 422")

# The synchronous form.
with open(clips[0], "rb") as audio:
    body, headers = form({"audio": ("clip00.wav", audio.read()), "format": "rttm"})
status, headers_, body = request(server, "/v1/diarize", "POST", body, headers)
check(status == 200 and body.decode() == expected.get("clip00", ""), "sync diarize RTTM")

# 20 concurrent uploads: all accepted, all done, each RTTM equal to the CLI's.
started = time.time()
with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
    answers = list(pool.map(lambda path: submit(server, path), clips))
check(all(status == 202 for status, _, _ in answers), f"20 uploads accepted: {[a[0] for a in answers]}")
ids = [json.loads(body)["id"] for _, _, body in answers]
for path, job_id in zip(clips, ids):
    job = wait_done(server, job_id)
    uri = os.path.splitext(os.path.basename(path))[0]
    check(job["state"] == "done", f"{uri}: {job}")
    check(result(server, job_id) == expected.get(uri, ""), f"{uri}: RTTM equals the CLI's")
print(f"20 concurrent uploads done in {time.time() - started:.1f} s")

# Errors: each class, each a JSON body.
# A body past the form's limit (the upload's plus 16 MiB for a transcript) is discarded unread.
status, error = error_of(request(server, "/v1/jobs", "POST", b"x" * (18 << 20),
                                 {"Content-Type": "multipart/form-data; boundary=x"}))
check(status == 413, f"18 MiB body: {status}")
# Headers are bounded too.
status, _, _ = request(server, "/v1/health", headers={"X-Padding": "y" * 20000})
check(status in (400, 413, 431), f"20 kB header: {status}")
with open(clips[0], "rb") as audio:
    big = audio.read() * 8  # 1 MiB of audio: over --max-upload-mb 1 once the form is added
body, headers = form({"audio": ("big.wav", big + big)})
status, error = error_of(request(server, "/v1/jobs", "POST", body, headers))
check(status == 413 and "1 MiB" in error["message"] and "max_upload" not in error["message"],
      f"big upload: {status} {error}")
body, headers = form({"audio": ("notes.wav", b"this is not audio at all, just text\n" * 10)})
status, error = error_of(request(server, "/v1/jobs", "POST", body, headers))
check(status == 415 and "notes.wav" in error["message"] and work not in error["message"],
      f"not audio: {status} {error}")
# Names that are not UTF-8 (found by fuzz_http: a 500 from the JSON writer): echoed and kept as
# U+FFFD.
with open(clips[0], "rb") as audio:
    clip_bytes = audio.read()
for name, filename in ((b"colo\xfcr", b"clip.wav"), (b"audio", b"caf\xe9 \xff.wav")):
    raw = (b'--b\r\nContent-Disposition: form-data; name="' + name + b'"; filename="' + filename +
           b'"\r\n\r\n' + clip_bytes + b"\r\n--b--\r\n")
    status, _, answer = request(server, "/v1/jobs", "POST", raw,
                                {"Content-Type": "multipart/form-data; boundary=b"})
    if name != b"audio":
        status, error = error_of((status, None, answer))
        check(status == 422 and "colo\ufffdr" in error["message"], f"non-UTF-8 field: {error}")
        continue
    check(status == 202, f"non-UTF-8 file name: {status} {answer[:200]!r}")
    job = wait_done(server, json.loads(answer)["id"])
    check(job["state"] == "done" and job["filename"] == "caf\ufffd \ufffd.wav" and
          job["uri"] == "caf\ufffd_\ufffd", f"non-UTF-8 file name: {job}")
    json.loads(result(server, job["id"], "json"))
    check(request(server, f"/v1/jobs/{job['id']}", "DELETE")[0] == 204, "remove it again")
# A transcript that is not UTF-8 (found by fuzz_http): the JSON result has U+FFFD.
status, _, answer = submit(server, clips[0],
                           transcript=("t.srt", b"1\n00:00:00,000 --> 00:00:03,000\ncaf\xe9\n"))
check(status == 202, f"non-UTF-8 transcript: {status} {answer[:200]!r}")
job = wait_done(server, json.loads(answer)["id"])
check(job["state"] == "done", f"non-UTF-8 transcript: {job}")
check("caf\ufffd" in json.dumps(json.loads(result(server, job["id"], "json")), ensure_ascii=False),
      "non-UTF-8 transcript in the JSON result")
check(request(server, f"/v1/jobs/{job['id']}", "DELETE")[0] == 204, "remove it again")
status, error = error_of(request(server, "/v1/jobs", "POST", b"{}", {"Content-Type": "application/json"}))
check(status == 415, f"not a form: {status}")
# Speaker counts within the option table's bounds, as every face takes them (1 to 1000).
for fields, word in (({"num_speakers": "0"}, "num_speakers"), ({"step": "3"}, "step 1"),
                     ({"max_speakers": "1001"}, "1 to 1000"),
                     ({"clustering": "vbx"}, "ahc"), ({"embedding_mode": "exact"}, "shared"),
                     ({"min_speakers": "3", "max_speakers": "2"}, "speakers"),
                     ({"colour": "red"}, "colour"), ({"exclusive": "maybe"}, "exclusive")):
    status, error = error_of(submit(server, clips[0], **fields))
    check(status == 422 and word in error["message"], f"{fields}: {status} {error}")
status, error = error_of(submit(server, clips[0], path="clip00.wav"))
check(status == 422, f"audio and path: {status}")
body, headers = form({"path": "../../etc/passwd"})
status, error = error_of(request(server, "/v1/jobs", "POST", body, headers))
check(status == 403, f"path without allow_paths: {status}")
for bad in ("0" * 31, "../../jobs.sqlite3", "..%2F..%2Fjobs.sqlite3", "%2e%2e", "A" * 32,
            ids[0] + "/../" + ids[1]):
    status, _, body = request(server, f"/v1/jobs/{bad}")
    check(status == 404 and json.loads(body)["error"]["code"] == "not_found", f"id {bad}: {status}")
    status, _, _ = request(server, f"/v1/jobs/{bad}/result")
    check(status == 404, f"result of {bad}: {status}")
status, error = error_of(request(server, "/v1/jobs/" + "0" * 32))
check(status == 404, "unknown id")
status, error = error_of(request(server, "/no/such/endpoint"))
check(status == 404, "unknown endpoint")
status, error = error_of(request(server, "/v1/jobs?limit=5000"))
check(status == 422, "limit over 1000")
# A page of none would name itself as the next page.
status, error = error_of(request(server, "/v1/jobs?limit=0"))
check(status == 422 and "limit" in error["message"], f"limit 0: {status}")
# The sample rate is the decoder's business: a field for it is refused, never rounded.
status, error = error_of(submit(server, clips[0], sample_rate="16000.7"))
check(status == 422 and "sample_rate" in error["message"], f"sample_rate: {status} {error}")

# Paging: pages of 7 cover every job once, in order.
seen = []
path = "/v1/jobs?limit=7"
while path:
    status, _, body = request(server, path)
    page = json.loads(body)
    check(status == 200 and len(page["jobs"]) <= 7, f"page {path}")
    seen += [job["id"] for job in page["jobs"]]
    path = page["next"]
check(len(seen) == page["total"] == 22 and len(set(seen)) == 22 and set(seen[2:]) == set(ids),
      f"paging: {len(seen)} of {page['total']}")

# Cancel: a queued job is cancelled at once, a running one when its run ends; a finished job is
# removed; a removed job is gone.
with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
    answers = list(pool.map(lambda path: submit(server, path), clips[:6]))
victim = json.loads(answers[-1][2])["id"]
status, _, body = request(server, f"/v1/jobs/{victim}", "DELETE")
check(status in (200, 202), f"cancel: {status}")
check(wait_done(server, victim)["state"] == "cancelled", "cancelled")
status, error = error_of(request(server, f"/v1/jobs/{victim}/result"))
check(status == 409 and error["code"] == "cancelled" and "cancelled" in error["message"],
      f"result of a cancelled job: {status} {error}")
status, _, _ = request(server, f"/v1/jobs/{victim}", "DELETE")
check(status == 204, f"remove: {status}")
check(request(server, f"/v1/jobs/{victim}")[0] == 404, "removed job is gone")
check(not os.path.exists(f"{work}/state/jobs/{victim}"), "its folder is gone")
for _, _, body in answers[:-1]:
    wait_done(server, json.loads(body)["id"])

# /metrics through a Prometheus parser.
status, _, body = request(server, "/metrics")
families = {family.name: family for family in text_string_to_metric_families(body.decode())}
jobs_by_state = {s.labels["state"]: s.value for s in families["parley_jobs"].samples}
check(jobs_by_state["done"] == 27 and jobs_by_state["cancelled"] == 0, f"jobs {jobs_by_state}")
check(families["parley_audio_seconds_processed"].samples[0].value > 100, "audio seconds")
stages = {s.labels["stage"] for s in families["parley_stage_seconds"].samples}
check({"decoding", "networks", "clustering"} <= stages, f"stage histograms {stages}")

# SIGTERM: a clean exit.
check(server.stop() == 0, "SIGTERM exits 0")
check("stopped" in open(server.log_path).read(), "the log says it stopped")

# --- Token, a full queue, server paths.
token = "s3cret-token"
with open(f"{work}/token", "w") as file:
    file.write(token + "\n")
allowed = f"{work}/allowed"
os.makedirs(allowed)
shutil.copy(clips[1], f"{allowed}/inside.wav")
os.symlink(clips[2], f"{allowed}/link-out.wav")
server = Server(f"{work}/state-auth", "--token-file", f"{work}/token", "--max-queue", "1",
                "--allow-paths", allowed, "--jobs", "1")
check(request(server, "/v1/health")[0] == 200, "health needs no token")
status, headers_, body = request(server, "/v1/jobs")
check(status == 401 and headers_["WWW-Authenticate"] == "Bearer", f"no token: {status}")
check(request(server, "/v1/jobs", token="wrong")[0] == 401, "wrong token")
check(request(server, "/metrics")[0] == 401, "metrics need the token")
check(request(server, "/v1/jobs", token=token)[0] == 200, "right token")
# The scheme is case-insensitive (RFC 7235); the token is not.
check(request(server, "/v1/jobs", headers={"Authorization": f"bearer {token}"})[0] == 200,
      "lower-case scheme")
check(request(server, "/v1/jobs", headers={"Authorization": f"BEARER {token.upper()}"})[0] == 401,
      "the token is case-sensitive")
for named, want in (("../clips/clip00.wav", 403), ("/etc/passwd", 403), ("link-out.wav", 403),
                    ("missing.wav", 404)):
    body, headers = form({"path": named})
    status, error = error_of(request(server, "/v1/jobs", "POST", body, headers, token))
    check(status == want, f"path {named}: {status} {error}")
body, headers = form({"path": "inside.wav"})
status, _, body = request(server, "/v1/jobs", "POST", body, headers, token)
check(status == 202, f"allowed path: {status}")
inside = wait_done(server, json.loads(body)["id"], token)
check(result(server, inside["id"], token=token) == expected["clip01"].replace("clip01", "inside"),
      "a server file's RTTM")
with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
    answers = list(pool.map(lambda path: submit(server, path, token), clips[:12]))
statuses = [status for status, _, _ in answers]
check(429 in statuses and 202 in statuses, f"a full queue answers 429: {statuses}")
for status, headers_, body in answers:
    if status == 429:
        check(int(headers_["Retry-After"]) > 0 and json.loads(body)["error"]["code"] == "queue_full",
              "429 with Retry-After")
    else:
        check(wait_done(server, json.loads(body)["id"], token)["state"] == "done", "accepted finish")
# The places the refused and accepted requests held are given back: the queue takes one again.
status, _, body = submit(server, clips[0], token)
check(status == 202 and wait_done(server, json.loads(body)["id"], token)["state"] == "done",
      f"a job after the full queue: {status}")
check(server.stop() == 0, "SIGTERM exits 0")

# --- Crash safety: kill -9 mid-run, restart on the same state dir.
state = f"{work}/state-crash"
server = Server(state, "--jobs", "1")
submitted = {}
for path in clips[:10] + [SAMPLE]:
    status, _, body = submit(server, path)
    check(status == 202, f"crash-test submit {status}")
    submitted[json.loads(body)["id"]] = os.path.splitext(os.path.basename(path))[0]
# Killed while one job is in the networks and another, taken by the engine (decoded, progress
# above 0), waits for them: only a job the networks started is running and has used an attempt.
deadline = time.time() + 60
while time.time() < deadline:
    jobs = json.loads(request(server, "/v1/jobs")[2])["jobs"]
    states = [job["state"] for job in jobs]
    waiting = [job["id"] for job in jobs if job["state"] == "queued" and job["progress"] > 0]
    if "done" in states and "running" in states and waiting:
        break
    time.sleep(0.05)
check(waiting, "a job waits in the engine before it runs: "
      f"{[(job['state'], job['progress']) for job in jobs]}")
for job in jobs:
    check(job["state"] != "running" or (job["progress"] >= 0.15 and job["attempts"] == 1),
          f"running only once in the networks: {job}")
done_before = {job["id"]: job["finished"] for job in jobs if job["state"] == "done"}
server.stop(signal.SIGKILL)
check(len(done_before) < len(submitted), "killed mid-run")
with sqlite3.connect(f"{state}/jobs.sqlite3") as db:
    after_kill = {job_id: (state_, attempts) for job_id, state_, attempts in db.execute(
        "SELECT id, state, attempts FROM jobs WHERE id IN (%s)" % ",".join("?" * len(waiting)),
        waiting)}
for job_id, (state_, attempts) in after_kill.items():
    check(state_ != "queued" or attempts == 0, f"a queued job has used no attempt: {attempts}")
server.start()
for job_id, uri in submitted.items():
    job = wait_done(server, job_id)
    check(job["state"] == "done" and job["attempts"] <= 2, f"after the crash {uri}: {job}")
    if job_id in waiting:
        # It may have started between the snapshot and the kill; if not, the crash cost nothing.
        check(job["attempts"] == after_kill[job_id][1] + 1,
              f"{uri} waited in the engine when it was killed and used no attempt: {job}")
    check(result(server, job_id) == expected.get(uri, ""), f"after the crash {uri}: same RTTM")
    if job_id in done_before:
        check(job["finished"] == done_before[job_id] and job["attempts"] == 1,
              f"{uri} finished before the kill and did not run again")
listing = json.loads(request(server, "/v1/jobs")[2])
check(listing["total"] == len(submitted), f"no job lost or doubled: {listing['total']}")
check(server.stop() == 0, "SIGTERM exits 0")

# A job whose runs killed the server twice while it was alone in the networks (the store blamed
# one crash on it, and it is running again, alone, when the server dies) is failed with a
# message at the next start, and the queue goes on.
crasher = next(iter(submitted))
with sqlite3.connect(f"{state}/jobs.sqlite3") as db:
    db.execute("UPDATE jobs SET state = 'running', crashes = 1 WHERE id = ?", (crasher,))
server.start()
job = wait_done(server, crasher)
check(job["state"] == "failed" and "2 times" in job["error"], f"twice-crashed job: {job}")
status, _, body = submit(server, clips[3])
check(status == 202 and wait_done(server, json.loads(body)["id"])["state"] == "done",
      "the queue goes on after a failed job")
check(server.stop() == 0, "SIGTERM exits 0")
print("serve test passed")
