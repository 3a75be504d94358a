#!/usr/bin/env python3
"""CTest: `parley serve --voiceprints LIB` names the speakers of every job's result.

  serve_voiceprints_test.py PARLEY WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR)

A voiceprint is taken from a speaker of `parley diarize`'s JSON result for a clip; the server's
job on the same clip names that speaker (the same audio gives the same centroid) in every document
(the JSON with its identification, the RTTM with its confidence, srt/vtt/txt with its score), once the voiceprint is added (while the server runs: the library is read
per job); a library of another model is refused at start. Exits 77 (skipped) without the shared folder."""
import json
import subprocess
import sys

from serve_test_support import (ServerProcess, check, form, prepare_models, request, result,
                                shared_folder_or_skip, wait_done)

parley, write_model, work = sys.argv[1:4]
shared = shared_folder_or_skip()
ENGINE = prepare_models(work, shared, write_model) + ["--threads", "2"]
CLIP = f"{shared}/eval/falcon-test/test.wav"
library = f"{work}/team.db"


def cli(*arguments):
    return subprocess.run([parley, *arguments], check=True, capture_output=True, text=True).stdout


def submit(server):
    with open(CLIP, "rb") as audio:
        body, headers = form({"audio": ("test.wav", audio.read())})
    status, _, answer = request(server, "/v1/jobs", "POST", body, headers)
    check(status in (200, 201, 202), f"submitted: {status} {answer[:200]!r}")
    job = json.loads(answer)["id"]
    check(wait_done(server, job)["state"] == "done", "job done")
    return job


cli("diarize", CLIP, *ENGINE, "--format", "json", "-o", f"{work}/clip.json", "-q")
clip = json.load(open(f"{work}/clip.json"))
labels = list(clip["speaker_embeddings"])
check(len(labels) >= 1 and any(clip["speaker_embeddings"][labels[0]]), f"a speaker ({labels})")
cli("voiceprint", "list", "--library", library)  # makes the empty library

server = ServerProcess(parley, ENGINE, f"{work}/state", "--voiceprints", library)
try:
    # Nobody to name yet.
    document = json.loads(result(server, submit(server), "json"))
    check(document["identification"]["speakers"] == [], f"no names: {document['identification']}")
    # A voiceprint added while the server runs counts for the next job.
    cli("voiceprint", "add", "--library", library, "Bob", "--from", f"{work}/clip.json",
        "--speaker", labels[0], *ENGINE, "-q")
    job = submit(server)
    document = json.loads(result(server, job, "json"))
    named = {s["label"]: s for s in document["identification"]["speakers"]}
    check(named.get(labels[0], {}).get("name") == "Bob", f"Bob named: {named}")
    check(named[labels[0]]["score"] > 0.999, f"score {named[labels[0]]['score']}")
    rttm = result(server, job, "rttm")
    check(" Bob " in rttm, "the RTTM carries the name")
    confidence = f"{named[labels[0]]['confidence']:.3f}"
    for line in rttm.splitlines():
        fields = line.split()
        expected = confidence if fields[7] == "Bob" else "<NA>"
        check(fields[8] == expected, f"RTTM column 9 {fields[8]!r}, not {expected!r}: {line}")
    # Subtitles and text show the name with its score.
    for format in ("srt", "vtt", "txt"):
        text = result(server, job, format)
        check("Bob (1.00)" in text and labels[0] not in text, f"{format} named with its score: {text[:300]!r}")
finally:
    server.stop()

# A library of another model is refused before the server serves.
foreign = json.loads(cli("voiceprint", "export", "--library", library))
for entry in foreign["voiceprints"]:
    entry["model_sha256"] = "f" * 64
with open(f"{work}/foreign.json", "w") as out:
    json.dump(foreign, out)
cli("voiceprint", "import", "--library", f"{work}/foreign.db", f"{work}/foreign.json")
refused = subprocess.run([parley, "serve", "--state-dir", f"{work}/state2", "--port", "0",
                          *ENGINE, "--voiceprints", f"{work}/foreign.db"],
                         capture_output=True, text=True, timeout=120)
check(refused.returncode != 0 and "another embedding model" in refused.stderr,
      f"foreign library refused ({refused.returncode}: {refused.stderr[-300:]})")
print("serve --voiceprints: all checks passed")
