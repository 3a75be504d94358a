#!/usr/bin/env python3
"""CTest: the server's options against the option table, checked from outside.

  serve_options_test.py PARLEY WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR: shared)

- docs/openapi.json, as committed, is what `parley options --openapi` writes and what the server
  serves (rewrite it with `parley options --openapi > docs/openapi.json`);
- the job form and the result's query parameter are written below by hand, independently of the
  table (name, type, default, bounds, choices): the served document must say the same, and the
  table's server options must be exactly these;
- the server enforces them: for each option, a value just past each bound (or outside the
  choices, or not of the type) is refused with 422 invalid_option and the table's message, and
  the bounds themselves pass its checks (the request then fails only for want of audio, or on a
  setting the server fixed when it started);
- every option takes effect: a job's own values, the server's fixed settings, and a job's
  transcript options (a transcript read in its transcript_format and fused with its
  gap_tolerance) give what `parley diarize` gives with the same flags.
Exits 77 (skipped) without the shared folder."""
import json
import os
import subprocess
import sys
import wave

from serve_test_support import (ServerProcess, check, error_of, form, prepare_models, request,
                                shared_folder_or_skip, wait_done)

parley, write_model, work = sys.argv[1:4]
shared = shared_folder_or_skip()
source_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FORMATS = ["rttm", "json", "txt", "srt", "vtt"]
SPEAKERS = {"type": "integer", "minimum": 1, "maximum": 1000}
# The job form's options as docs/serve.md describes them: what a client may send.
EXPECTED_FORM = {
    "step": {"type": "number", "minimum": 0.1, "maximum": 10, "default": 1.0},
    "embedding_mode": {"type": "string", "enum": ["shared", "exact"], "default": "shared"},
    "clustering": {"type": "string", "enum": ["vbx", "ahc"], "default": "vbx"},
    "num_speakers": SPEAKERS,
    "min_speakers": SPEAKERS,
    "max_speakers": SPEAKERS,
    "exclusive": {"type": "boolean", "default": False},
    "format": {"type": "string", "enum": FORMATS, "default": "rttm"},
    # How the job's transcript is read and fused (no upper bound on the gap tolerance).
    "transcript_format": {"type": "string", "enum": ["auto", "srt", "vtt", "ctm",
                                                     "whisper-cpp-json", "openai-json"],
                          "default": "auto"},
    "gap_tolerance": {"type": "number", "minimum": 0, "default": 1.0},
}
# Form fields that are no option of the table: the recording and a transcript.
OTHER_FIELDS = {"audio", "path", "transcript"}

# --- The committed document is the generated one.
generated = subprocess.run([parley, "options", "--openapi"], check=True, capture_output=True)
with open(f"{source_dir}/docs/openapi.json", "rb") as document:
    committed = document.read()
check(committed == generated.stdout,
      "docs/openapi.json is what `parley options --openapi` writes (rewrite it: build/parley "
      "options --openapi > docs/openapi.json)")

# --- The table's server options are the expected ones, with their types, defaults and bounds.
table = json.loads(subprocess.run([parley, "options", "--json"], check=True,
                                  capture_output=True, text=True).stdout)
server_options = {option["name"]: option for option in table if option["faces"]["server"]}
check(set(server_options) == set(EXPECTED_FORM),
      f"the table's server options are the expected form: {sorted(server_options)} vs "
      f"{sorted(EXPECTED_FORM)}")
TABLE_TYPES = {"number": "number", "integer": "integer", "flag": "boolean", "choice": "string"}
for name, expected in EXPECTED_FORM.items():
    option = server_options[name]
    check(TABLE_TYPES.get(option["type"]) == expected["type"], f"{name}: type {option['type']}")
    check(option["default"] == expected.get("default"), f"{name}: default {option['default']}")
    check(option["minimum"] == expected.get("minimum") and
          option["maximum"] == expected.get("maximum"),
          f"{name}: bounds {option['minimum']} to {option['maximum']}")
    check(option["choices"] == expected.get("enum", []), f"{name}: choices {option['choices']}")

# --- A server on the test models: what it serves and what it accepts.
engine = prepare_models(work, shared, write_model) + ["--threads", "2"]
server = ServerProcess(parley, engine, f"{work}/state")
status, _, body = request(server, "/v1/openapi.json")
check(status == 200 and json.loads(body) == json.loads(committed),
      "the served OpenAPI is docs/openapi.json")
served = json.loads(body)
properties = served["components"]["schemas"]["JobForm"]["properties"]
check(set(properties) == OTHER_FIELDS | set(EXPECTED_FORM),
      f"the form's fields: {sorted(properties)}")
for name, expected in EXPECTED_FORM.items():
    schema = {key: value for key, value in properties[name].items() if key != "description"}
    check(schema == expected, f"the form's {name}: {schema} vs {expected}")
    check(properties[name].get("description"), f"the form's {name} is described")
format_parameter = next(parameter for parameter in
                        served["paths"]["/v1/jobs/{id}/result"]["parameters"]
                        if parameter.get("name") == "format")
check(format_parameter["in"] == "query" and format_parameter["schema"] ==
      {"type": "string", "enum": FORMATS, "default": "rttm"},
      f"the result's format parameter: {format_parameter}")

status, _, body = request(server, "/v1/health")
fixed = json.loads(body)["settings"]


def submitted(name, value):
    """The server's answer to a job form holding only this option (no audio)."""
    body, headers = form({name: value})
    return error_of(request(server, "/v1/jobs", "POST", body, headers))


def number_text(value, integer):
    return str(int(value)) if integer else f"{value:g}"


for name, expected in EXPECTED_FORM.items():
    kind = expected["type"]
    refused, accepted = [], []
    if kind in ("number", "integer"):
        integer = kind == "integer"
        low, high = expected["minimum"], expected.get("maximum")
        step = 1 if integer else 0.01
        if high is None:
            text = number_text(low - step, integer)
            refused.append((text, f"{name}: must be at least {number_text(low, integer)} "
                                  f"(got {text})"))
        else:
            bounds = f"must be {number_text(low, integer)} to {number_text(high, integer)}"
            for value in (low - step, high + step):
                text = number_text(value, integer)
                refused.append((text, f"{name}: {bounds} (got {text})"))
        refused.append(("x", f"{name}: expects a number (got 'x')"))
        if integer:
            refused.append(("2.5", f"{name}: expects a whole number (got '2.5')"))
        accepted = [number_text(low, integer),
                    number_text(1e6 if high is None else high, integer)]
    elif kind == "boolean":
        refused.append(("maybe", f"{name}: expected true or false (got 'maybe')"))
        refused.append(("", f"{name}: expected true or false (got '')"))
        accepted = ["true", "false", "on", "0"]
    else:
        choices = ", ".join(expected["enum"])
        refused.append(("nope", f"{name}: expected one of {choices} (got 'nope')"))
        accepted = list(expected["enum"])
    for text, message in refused:
        status, error = submitted(name, text)
        check(status == 422 and error["code"] == "invalid_option" and error["message"] == message,
              f"{name}={text!r} is refused with the table's message {message!r}: {status} {error}")
    for text in accepted:
        status, error = submitted(name, text)
        # Past the option checks: the job lacks only its recording, or names a setting this
        # server fixed when it started with another value.
        value = json.loads(text) if kind in ("number", "integer") else text
        expected_code = ("setting_fixed" if name in fixed and fixed[name] != value
                         else "missing_audio")
        check(status == 422 and error["code"] == expected_code,
              f"{name}={text!r} passes the option checks: {status} {error}")

# --- The result's format parameter: each choice answers, another is refused.
clip = f"{work}/clip.wav"
with wave.open(f"{shared}/eval/falcon-test/test.wav") as source, wave.open(clip, "wb") as out:
    out.setparams(source.getparams())
    out.writeframes(source.readframes(4 * source.getframerate()))
with open(clip, "rb") as audio:
    body, headers = form({"audio": ("clip.wav", audio.read())})
status, _, body = request(server, "/v1/jobs", "POST", body, headers)
check(status == 202, f"a job: {status} {body!r}")
job = wait_done(server, json.loads(body)["id"])
check(job["state"] == "done", f"the job runs: {job}")
for name in FORMATS:
    status, _, _ = request(server, f"/v1/jobs/{job['id']}/result?format={name}")
    check(status == 200, f"format={name}: {status}")
status, error = error_of(request(server, f"/v1/jobs/{job['id']}/result?format=nope"))
check(status == 422 and error["code"] == "invalid_parameter",
      f"format=nope is refused: {status} {error}")
check(server.stop() == 0, "the server stops cleanly")

# --- Every option takes effect: a job's own values (the table's per_job options) and the
# settings a server fixed when it started give the result the CLI gives with the same flags, and
# that result differs from the default one (so a value the server ignored would be seen).
long_clip = f"{shared}/eval/pyannote-sample/sample.wav"
with open(long_clip, "rb") as audio:
    long_audio = audio.read()


def cli_rttm(engine_flags, *flags):
    return subprocess.run([parley, "diarize", long_clip, *engine_flags, "-q", *flags], check=True,
                          capture_output=True, text=True).stdout


def job_rttm(server, fields):
    body, headers = form({"audio": ("sample.wav", long_audio), **fields})
    status, _, answer = request(server, "/v1/jobs", "POST", body, headers)
    check(status == 202, f"a job with {fields}: {status} {answer!r}")
    job = wait_done(server, json.loads(answer)["id"])
    check(job["state"] == "done", f"the job with {fields} runs: {job}")
    status, _, text = request(server, f"/v1/jobs/{job['id']}/result?format=rttm")
    check(status == 200, f"the result of the job with {fields}: {status}")
    return text.decode()


def takes_effect(server, engine_flags, default, fields, flags):
    expected = cli_rttm(engine_flags, *flags)
    check(expected != default, f"{flags} changes the CLI's RTTM (else this case proves nothing)")
    got = job_rttm(server, fields)
    check(got == expected, f"a job with {fields} gives the CLI's RTTM with {flags}:\n{got}\n"
          f"vs\n{expected}")


# A job's own values, each alone, on a server with the table's defaults (the test models' ahc).
server = ServerProcess(parley, engine, f"{work}/state-per-job")
default = cli_rttm(engine)
check(job_rttm(server, {}) == default, "a job without options gives the CLI's default RTTM")
per_job = {option["name"] for option in server_options.values() if option["name"] not in fixed}
check(per_job == {"num_speakers", "min_speakers", "max_speakers", "exclusive", "format",
                  "transcript_format", "gap_tolerance"},
      f"the options a job sets alone: {sorted(per_job)}")
speakers_found = len({line.split()[7] for line in default.splitlines()})
check(speakers_found >= 2, f"the default finds several speakers ({speakers_found})")
for fields, flags in [({"num_speakers": "1"}, ["--num-speakers", "1"]),
                      ({"max_speakers": "1"}, ["--max-speakers", "1"]),
                      ({"min_speakers": str(speakers_found + 2)},
                       ["--min-speakers", str(speakers_found + 2)]),
                      ({"exclusive": "true"}, ["--exclusive"])]:
    takes_effect(server, engine, default, fields, flags)

# A job's transcript options: the job's transcript is read in its transcript_format and fused
# with its gap_tolerance, as `parley diarize --transcript` does with the same flags. Each cue lies
# between two turns, within the default tolerance of the turn before it: with gap_tolerance 0 its
# words have no speaker, with the default they have one (so a value the server ignored is seen).
exclusive_turns = sorted((float(line.split()[3]), float(line.split()[3]) + float(line.split()[4]))
                         for line in cli_rttm(engine, "--exclusive").splitlines())
cues = []
for (_, end), (start, _) in zip(exclusive_turns, exclusive_turns[1:]):
    if start - end >= 0.2:
        at = end + min(0.5, (start - end) / 2)
        cues.append((at - 0.05, at + 0.05))
check(cues, f"the exclusive turns leave gaps for cues: {exclusive_turns}")


def srt_time(seconds):
    milliseconds = round(seconds * 1000)
    return (f"{milliseconds // 3600000:02d}:{milliseconds // 60000 % 60:02d}:"
            f"{milliseconds // 1000 % 60:02d},{milliseconds % 1000:03d}")


srt = "".join(f"{number}\n{srt_time(start)} --> {srt_time(end)}\nword {number}\n\n"
              for number, (start, end) in enumerate(cues, 1))
with open(f"{work}/between.srt", "w") as file:
    file.write(srt)


def job_text(server, fields):
    body, headers = form({"audio": ("sample.wav", long_audio),
                          "transcript": ("between.srt", srt.encode()), **fields})
    status, _, answer = request(server, "/v1/jobs", "POST", body, headers)
    check(status == 202, f"a job with a transcript and {fields}: {status} {answer!r}")
    job = wait_done(server, json.loads(answer)["id"])
    check(job["state"] == "done", f"the job with a transcript and {fields} runs: {job}")
    status, _, text = request(server, f"/v1/jobs/{job['id']}/result?format=txt")
    check(status == 200, f"the transcript of the job with {fields}: {status}")
    return text.decode()


def cli_text(*flags):
    return cli_rttm(engine, "--transcript", f"{work}/between.srt", "--format", "txt", *flags)


fused_default = cli_text()
check("UNKNOWN" not in fused_default, f"the default tolerance names every cue:\n{fused_default}")
check(job_text(server, {}) == fused_default, "a job's transcript fuses as the CLI's by default")
strict = cli_text("--gap-tolerance", "0")
check("UNKNOWN" in strict and strict != fused_default,
      f"--gap-tolerance 0 leaves the cues between turns unknown:\n{strict}")
got = job_text(server, {"gap_tolerance": "0"})
check(got == strict, f"a job with gap_tolerance 0 gives the CLI's transcript with --gap-tolerance "
      f"0:\n{got}\nvs\n{strict}")
check(job_text(server, {"transcript_format": "srt", "gap_tolerance": "0"}) == strict,
      "a job naming its transcript's format reads it so")
# The job's transcript_format is the one its transcript is read in: an SRT read as CTM is
# refused when the job is submitted, as `parley diarize --transcript-format ctm` refuses it.
body, headers = form({"audio": ("sample.wav", long_audio),
                      "transcript": ("between.srt", srt.encode()), "transcript_format": "ctm"})
status, error = error_of(request(server, "/v1/jobs", "POST", body, headers))
check(status == 422 and error["code"] == "invalid_transcript" and
      error["message"].startswith("between.srt:1:"),
      f"an SRT sent as transcript_format ctm is refused: {status} {error}")
printed = subprocess.run([parley, "diarize", long_clip, *engine, "-q", "--transcript",
                          f"{work}/between.srt", "--transcript-format", "ctm"],
                         capture_output=True, text=True)
check(printed.returncode == 1 and "between.srt:1:" in printed.stderr,
      f"the CLI refuses it alike: {printed.returncode} {printed.stderr!r}")
check(server.stop() == 0, "the per-job server stops cleanly")

# Settings fixed when the server starts: another step, embedding mode and AHC threshold.
fixed_flags = ["--step", "2", "--embedding-mode", "exact", "--ahc-threshold", "0.3"]
server = ServerProcess(parley, engine + fixed_flags, f"{work}/state-fixed")
status, _, body = request(server, "/v1/health")
check(json.loads(body)["settings"] == {"step": 2.0, "embedding_mode": "exact", "clustering": "ahc"},
      f"the fixed settings are the server's flags: {body!r}")
takes_effect(server, engine, default, {}, fixed_flags)
takes_effect(server, engine, default, {"step": "2", "num_speakers": "1"},
             fixed_flags + ["--num-speakers", "1"])
for name, text, shown in [("step", "1", "2"), ("embedding_mode", "shared", "exact"),
                          ("clustering", "vbx", "ahc")]:
    status, error = submitted(name, text)
    message = (f"{name}: the server runs with {name} {shown} (a server's model settings are fixed "
               f"when it starts; got {text})")
    check(status == 422 and error["code"] == "setting_fixed" and error["message"] == message,
          f"{name}={text} on a server fixed at {shown} is refused: {status} {error}")
check(server.stop() == 0, "the fixed server stops cleanly")
print("ok")
