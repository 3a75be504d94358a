#!/usr/bin/env python3
"""CTest: the speaker library over HTTP, /v1/voiceprints... of `parley serve --voiceprints LIB`.

  serve_voiceprint_routes_test.py PARLEY WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR)

- every route wants the token (401 without it, or with another);
- list, add from a finished job's speaker and from an uploaded recording's range (the same
  voiceprint `parley voiceprint add --start --end` makes), rename (409 onto a taken name unless
  merge), remove, export and import (a voiceprint of another model refused, all or none); a job
  whose result another embedding model computed gives no voiceprint (422);
- hostile input: malformed, oversized and mistyped JSON, unknown jobs and speakers, names with odd
  characters, a name in UTF-8 in the path: a clear 4xx, never a 5xx, and the server lives on;
- concurrency: clients adding, renaming and removing while jobs are identified against the same
  library: no lost write, no "database is locked" anywhere, every list a consistent snapshot;
- a server without a library answers 404 no_library.
Exits 77 (skipped) without the shared folder."""
import concurrent.futures
import hashlib
import http.client
import json
import math
import subprocess
import sys
import threading
import urllib.parse

from serve_test_support import (ServerProcess, check, error_of, form, prepare_models, request,
                                shared_folder_or_skip, wait_done)

parley, write_model, work = sys.argv[1:4]
shared = shared_folder_or_skip()
ENGINE = prepare_models(work, shared, write_model) + ["--threads", "2"]
CLIP = f"{shared}/eval/falcon-test/test.wav"
library = f"{work}/team.db"
TOKEN = "voice-token"
with open(f"{work}/token", "w") as file:
    file.write(TOKEN + "\n")
with open(f"{work}/models/tiny-embedding.onnx", "rb") as model:
    DIGEST = hashlib.sha256(model.read()).hexdigest()
with open(CLIP, "rb") as audio:
    CLIP_BYTES = audio.read()
JSON = {"Content-Type": "application/json"}


def cli(*arguments):
    return subprocess.run([parley, *arguments], check=True, capture_output=True, text=True).stdout


def call(server, path, method="GET", body=None, headers=None, token=TOKEN):
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        headers = JSON
    return request(server, path, method, body, headers, token)


def ok(answer, status, what):
    check(answer[0] == status, f"{what}: {answer[0]} {answer[2][:300]!r}")
    return json.loads(answer[2])


def refused(answer, status, code, what):
    got, error = error_of(answer)
    check(got == status and error["code"] == code, f"{what}: {got} {error}")
    return error["message"]


def names(server):
    return [v["name"] for v in ok(call(server, "/v1/voiceprints"), 200, "list")["voiceprints"]]


def submit(server):
    body, headers = form({"audio": ("test.wav", CLIP_BYTES)})
    job = ok(request(server, "/v1/jobs", "POST", body, headers, TOKEN), 202, "job")["id"]
    check(wait_done(server, job, token=TOKEN)["state"] == "done", "job done")
    return job


def from_audio(server, name, **fields):
    body, headers = form({"name": name, "audio": ("clip.wav", CLIP_BYTES),
                          **{k: str(v) for k, v in fields.items()}})
    return request(server, "/v1/voiceprints", "POST", body, headers, TOKEN)


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


cli("voiceprint", "list", "--library", library)  # makes the empty library
server = ServerProcess(parley, ENGINE, f"{work}/state", "--voiceprints", library,
                       "--token-file", f"{work}/token")
try:
    # --- The token on every route.
    form_body, form_headers = form({"name": "Eve", "audio": ("clip.wav", b"RIFF")})
    routes = [("/v1/voiceprints", "GET", None, None),
              ("/v1/voiceprints", "POST", form_body, form_headers),
              ("/v1/voiceprints", "POST", b'{"name": "Eve"}', JSON),
              ("/v1/voiceprints/export", "GET", None, None),
              ("/v1/voiceprints/import", "POST", b"{}", JSON),
              ("/v1/voiceprints/Eve", "PATCH", b'{"name": "Eva"}', JSON),
              ("/v1/voiceprints/Eve", "DELETE", None, None)]
    for path, method, body, headers in routes:
        for token in (None, "not-the-token"):
            answer = request(server, path, method, body, headers, token)
            refused(answer, 401, "unauthorized", f"{method} {path} with token {token}")
            check(answer[1].get("WWW-Authenticate") == "Bearer", f"{method} {path}: challenge")
    check(names(server) == [], "the library is empty")

    # --- From a finished job's speaker.
    job = submit(server)
    document = json.loads(call(server, f"/v1/jobs/{job}/result?format=json")[2])
    label = next(iter(document["speaker_embeddings"]))
    bob = ok(call(server, "/v1/voiceprints", "POST", {"name": "Bob", "job": job,
                                                      "speaker": label}), 201, "Bob")["voiceprint"]
    check(bob["name"] == "Bob" and bob["model_sha256"] == DIGEST and bob["dimension"] > 0,
          f"Bob's voiceprint {bob}")
    check(label in bob["source"] and "test.wav" in bob["source"], f"source {bob['source']}")
    # The next job's speaker is named Bob; its SPEAKER_xx still finds it.
    named_job = submit(server)
    named = json.loads(call(server, f"/v1/jobs/{named_job}/result?format=json")[2])
    check([s["name"] for s in named["identification"]["speakers"]] == ["Bob"], f"named {named}")
    again = ok(call(server, "/v1/voiceprints", "POST", {"name": "Bob", "job": named_job,
                                                        "speaker": label}), 201, "by label")
    check(again["voiceprint"]["name"] == "Bob", "a named speaker's label gives its voiceprint")

    # --- From a range of an uploaded recording: the CLI's voiceprint of that range.
    jobs_before = ok(call(server, "/v1/jobs"), 200, "jobs")["total"]
    carol = ok(from_audio(server, "Carol", start=2, end=14), 201, "Carol")["voiceprint"]
    check(carol["source"] == "clip.wav 2.000-14.000", f"Carol's source {carol['source']}")
    check(ok(call(server, "/v1/jobs"), 200, "jobs")["total"] == jobs_before,
          "the voiceprint's job is gone")
    cli("voiceprint", "add", "--library", f"{work}/cli.db", "Carol", CLIP, "--start", "2", "--end",
        "14", *ENGINE, "-q")
    by_cli = json.loads(cli("voiceprint", "export", "--library", f"{work}/cli.db"))["voiceprints"][0]
    exported = json.loads(call(server, "/v1/voiceprints/export")[2])
    by_server = next(v for v in exported["voiceprints"] if v["name"] == "Carol")
    similarity = cosine(by_cli["embedding"], by_server["embedding"])
    check(similarity > 0.9999, f"the server's voiceprint of a range is the CLI's ({similarity})")
    whole = ok(from_audio(server, "Dave"), 201, "a whole recording")["voiceprint"]
    check(whole["source"] == "clip.wav", f"Dave's source {whole['source']}")
    # A job whose result another embedding model computed (its folder records that model's
    # digest, as after a restart with other models): its centroids give no voiceprint here.
    foreign_job = submit(server)
    with open(f"{work}/state/jobs/{foreign_job}/embedding_model.sha256", "w") as digest_file:
        digest_file.write(("0" if DIGEST[0] != "0" else "1") + DIGEST[1:] + "\n")
    message = refused(call(server, "/v1/voiceprints", "POST",
                           {"name": "Eve", "job": foreign_job, "speaker": label}), 422,
                      "no_voiceprint", "a job of another embedding model")
    check("another embedding model" in message, f"says why: {message}")
    check("Eve" not in names(server), "nothing added from another model's job")

    # --- Rename and remove.
    ok(call(server, "/v1/voiceprints/Bob", "PATCH", {"name": "Robert"}), 200, "rename")
    refused(call(server, "/v1/voiceprints/Carol", "PATCH", {"name": "Robert"}), 409, "name_taken",
            "rename onto a taken name")
    merged = ok(call(server, "/v1/voiceprints/Carol", "PATCH", {"name": "Robert", "merge": True}),
                200, "merge")
    check(merged == {"name": "Robert", "renamed": 1}, f"merged {merged}")
    check(sorted(names(server)) == ["Dave", "Robert", "Robert", "Robert"], f"{names(server)}")
    refused(call(server, "/v1/voiceprints/Nobody", "PATCH", {"name": "X"}), 404, "not_found",
            "rename of nobody")
    removed = ok(call(server, "/v1/voiceprints/Dave", "DELETE"), 200, "remove")
    check(removed == {"name": "Dave", "removed": 1}, f"removed {removed}")
    refused(call(server, "/v1/voiceprints/Dave", "DELETE"), 404, "not_found", "removed twice")
    # A name in UTF-8, in the path percent-encoded.
    ok(call(server, "/v1/voiceprints", "POST", {"name": "Zoë", "job": job, "speaker": label}), 201,
       "Zoë")
    zoe = "/v1/voiceprints/" + urllib.parse.quote("Zoë")
    ok(call(server, zoe, "PATCH", {"name": "Zoé_2"}), 200, "rename Zoë")
    ok(call(server, "/v1/voiceprints/" + urllib.parse.quote("Zoé_2"), "DELETE"), 200, "remove Zoé")

    # --- Export and import.
    exported = json.loads(call(server, "/v1/voiceprints/export")[2])
    check(exported["format"] == "parley-speaker-library" and len(exported["voiceprints"]) == 3,
          f"export {len(exported['voiceprints'])}")
    imported = ok(call(server, "/v1/voiceprints/import", "POST", exported), 201, "import")
    check(imported == {"imported": 3} and len(names(server)) == 6, f"imported {imported}")
    foreign = json.loads(json.dumps(exported))
    foreign["voiceprints"][1]["model_sha256"] = "f" * 64
    message = refused(call(server, "/v1/voiceprints/import", "POST", foreign), 422,
                      "invalid_library", "another model's voiceprint")
    check("another embedding model" in message, f"says why: {message}")
    check(len(names(server)) == 6, "a refused import adds nothing")

    # --- Hostile input: a clear 4xx, never a 5xx.
    hostile = [
        (("/v1/voiceprints", "POST", b"{not json", JSON), 400, "invalid_json"),
        (("/v1/voiceprints", "POST", b"[1, 2]", JSON), 400, "invalid_json"),
        (("/v1/voiceprints", "POST", b'{"name": "\xff\xfe", "job": "x"}', JSON), 400,
         "invalid_json"),
        (("/v1/voiceprints", "POST", b"name=Eve", {"Content-Type": "text/plain"}), 415,
         "unsupported_media_type"),
        (("/v1/voiceprints", "POST", b'{"name": 7, "job": "a", "speaker": "b"}', JSON), 422,
         "invalid_field"),
        (("/v1/voiceprints", "POST", b'{"name": "Eve"}', JSON), 422, "missing_field"),
        (("/v1/voiceprints", "POST", json.dumps({"name": "Eve", "job": "0" * 32,
                                                 "speaker": label}).encode(), JSON), 404,
         "not_found"),
        (("/v1/voiceprints", "POST", json.dumps({"name": "Eve", "job": "../../etc/passwd",
                                                 "speaker": label}).encode(), JSON), 404,
         "not_found"),
        (("/v1/voiceprints", "POST", json.dumps({"name": "Eve", "job": job,
                                                 "speaker": "SPEAKER_77"}).encode(), JSON), 422,
         "no_voiceprint"),
        (("/v1/voiceprints/Robert", "PATCH", json.dumps({"name": "x" * 70000}).encode(), JSON),
         413, "too_large"),
        (("/v1/voiceprints/Robert", "PATCH", b'{"name": "Rob", "merge": "yes"}', JSON), 422,
         "invalid_field"),
        (("/v1/voiceprints/Robert", "DELETE", b"{}", JSON), 413, "too_large"),
        (("/v1/voiceprints/import", "POST", b'{"format": "something else"}', JSON), 422,
         "invalid_library"),
        (("/v1/voiceprints/import", "POST", json.dumps(
            {"format": "parley-speaker-library", "version": 1,
             "voiceprints": [{"name": "Eve", "model_sha256": DIGEST, "embedding": 5}]}).encode(),
          JSON), 422, "invalid_library"),
    ]
    for bad_name in ("two words", "SPEAKER_03", "GLOBAL_1", "tab\there", "nul\u0000", "",
                     "x" * 129, "new\nline"):
        hostile.append((("/v1/voiceprints", "POST", json.dumps(
            {"name": bad_name, "job": job, "speaker": label}).encode(), JSON), 422,
            "invalid_name"))
        hostile.append((("/v1/voiceprints/Robert", "PATCH",
                         json.dumps({"name": bad_name}).encode(), JSON), 422,
                        "invalid_name"))
    for (path, method, body, headers), status, code in hostile:
        refused(request(server, path, method, body, headers, TOKEN), status, code,
                f"{method} {path} {body[:60]!r}")
    # Forms: a name the library refuses, a bad range, an unknown field, no name, no audio.
    for fields, status, code in [({"name": "two words"}, 422, "invalid_name"),
                                 ({"name": "Eve", "start": "abc"}, 422, "invalid_parameter"),
                                 ({"name": "Eve", "start": "-1"}, 422, "invalid_parameter"),
                                 ({"name": "Eve", "start": "9", "end": "3"}, 422,
                                  "invalid_parameter"),
                                 ({"name": "Eve", "start": "30"}, 422, "invalid_parameter"),
                                 ({"name": "Eve", "num_speakers": "2"}, 422, "unknown_field"),
                                 ({}, 422, "missing_field")]:
        body, headers = form({"audio": ("clip.wav", CLIP_BYTES), **fields})
        refused(request(server, "/v1/voiceprints", "POST", body, headers, TOKEN), status, code,
                f"form {fields}")
    body, headers = form({"name": "Eve"})
    refused(request(server, "/v1/voiceprints", "POST", body, headers, TOKEN), 422, "missing_audio",
            "form without audio")
    body, headers = form({"name": "Eve", "audio": ("clip.wav", b"not audio at all")})
    refused(request(server, "/v1/voiceprints", "POST", body, headers, TOKEN), 415,
            "unsupported_audio", "form with a file that is not audio")
    # An oversized import is refused from its length, before it is read.
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.putrequest("POST", "/v1/voiceprints/import")
    for header, value in {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                          "Content-Length": str(65 << 20)}.items():
        connection.putheader(header, value)
    connection.endheaders()
    status = connection.getresponse().status
    connection.close()
    check(status == 413, f"an import over 64 MiB: {status}")
    check(sorted(names(server)) == ["Robert"] * 6, f"hostile input changed nothing: {names(server)}")

    # --- Concurrency: writers and identifying jobs on one library.
    CLIENTS, ROUNDS = 6, 12
    failures = []
    lists = []
    stop = threading.Event()

    def note(answer, status, what):
        if answer[0] != status or b"locked" in answer[2]:
            failures.append(f"{what}: {answer[0]} {answer[2][:200]!r}")

    def writer(client):
        for round_ in range(ROUNDS):
            first, second = f"Temp{client}_{round_}", f"Moved{client}_{round_}"
            note(call(server, "/v1/voiceprints", "POST",
                      {"name": first, "job": job, "speaker": label}), 201, f"add {first}")
            note(call(server, f"/v1/voiceprints/{first}", "PATCH", {"name": second}), 200,
                 f"rename {first}")
            note(call(server, f"/v1/voiceprints/{second}", "DELETE"), 200, f"remove {second}")
            note(call(server, "/v1/voiceprints", "POST",
                      {"name": f"Keep{client}", "job": job, "speaker": label}), 201, "keep")

    def lister():
        while not stop.is_set():
            answer = call(server, "/v1/voiceprints")
            note(answer, 200, "list")
            if answer[0] == 200:
                lists.append([v["name"] for v in json.loads(answer[2])["voiceprints"]])

    def jobs():
        return [submit(server) for _ in range(2)]

    with concurrent.futures.ThreadPoolExecutor(CLIENTS + 4) as pool:
        listing = [pool.submit(lister) for _ in range(2)]
        running = [pool.submit(jobs) for _ in range(2)]
        writers = [pool.submit(writer, client) for client in range(CLIENTS)]
        for future in writers + running:
            future.result()
        stop.set()
        for future in listing:
            future.result()
    check(not failures, f"{len(failures)} failed requests, first {failures[:3]}")
    print(f"concurrency: {CLIENTS} writers x {ROUNDS} rounds, {len(lists)} lists, 4 jobs")
    final = names(server)
    for client in range(CLIENTS):
        check(final.count(f"Keep{client}") == ROUNDS, f"client {client}'s adds all kept: {final}")
    check(not [n for n in final if n.startswith(("Temp", "Moved"))], f"leftovers {final}")
    check(len(lists) > 0, "lists answered meanwhile")
    for snapshot in lists:
        for client in range(CLIENTS):
            for round_ in range(ROUNDS):
                # A rename is one transaction: never both names, never one twice.
                both = snapshot.count(f"Temp{client}_{round_}") + \
                    snapshot.count(f"Moved{client}_{round_}")
                check(both <= 1, f"a list mid-rename shows both names: {snapshot}")
        check(snapshot == sorted(snapshot), "a list is ordered by name")
    for job_id in [j for future in running for j in future.result()]:
        document = json.loads(call(server, f"/v1/jobs/{job_id}/result?format=json")[2])
        check("identification" in document, f"job {job_id} identified")
    ok(call(server, "/v1/health"), 200, "the server lives on")
finally:
    server.stop()
with open(server.log_path) as log:
    text = log.read()
check("locked" not in text, "no 'database is locked' in the server's log")
check("speakers left unnamed" not in text, "every job's identification read the library")

# --- A server without a library.
plain = ServerProcess(parley, ENGINE, f"{work}/state-plain")
try:
    for path, method, body in [("/v1/voiceprints", "GET", None),
                               ("/v1/voiceprints", "POST", b'{"name": "Eve"}'),
                               ("/v1/voiceprints/export", "GET", None),
                               ("/v1/voiceprints/Eve", "DELETE", None)]:
        refused(request(plain, path, method, body, JSON if body else None), 404, "no_library",
                f"{method} {path} without a library")
finally:
    plain.stop()
print("serve /v1/voiceprints: all checks passed")
