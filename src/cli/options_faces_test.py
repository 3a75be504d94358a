#!/usr/bin/env python3
"""CTest: the command line's flags against the option table (`parley options --json`).

  options_faces_test.py PARLEY WORK_DIR

Read from `--help` as a user reads it, so that a flag registered by hand beside the table (another
spelling, another default) fails here:
- `parley diarize` offers every option of the table's CLI face, under the table's flag, with the
  table's default (none shown where the table has none);
- `parley serve` offers every engine setting of the table (output, speed, placement, models,
  layout) and the speaker library's, as the server's fixed settings;
- the engine's messages reach the user naming the flag, for plain option names too;
- `parley stream`'s flags and the WebSocket's query parameters (OpenAPI) are the stream's own
  table's (`parley options --stream --json`): flags, defaults, bounds."""
import json
import os
import re
import subprocess
import sys
import wave

parley, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def run(*arguments):
    return subprocess.run([parley, *arguments], capture_output=True, text=True, cwd=work)


def help_flags(command):
    """{flag: default shown or None} of `parley COMMAND --help` (CLI11's layout: the flags, a
    type with its checks, then '=default')."""
    text = run(command, "--help").stdout
    flags = {}
    for line in text.splitlines():
        match = re.match(r"^  (-[-\w]+(?:,-[-\w]+)*)(.*)$", line)
        if not match:
            continue
        spec = re.split(r"\s{2,}", match.group(2).strip())[0]
        default = re.search(r"=([^\s=]+)$", spec)
        for flag in match.group(1).split(","):
            flags[flag] = default.group(1) if default else None
    check(flags, f"parley {command} --help lists flags")
    return flags


def same_default(option, shown):
    kind, default = option["type"], option["default"]
    if default is None or default == [] or kind == "flag":
        # No value to show; a flag registered with a default of its own would show one.
        return shown is None
    if shown is None:
        return False
    if kind == "number":
        return float(shown) == default
    if kind == "integer":
        return int(shown) == default
    return shown == default


table = json.loads(run("options", "--json").stdout)
# --format's default follows the input (txt with a transcript), as the table's help says.
DEFAULT_BY_INPUT = {"format"}

diarize = help_flags("diarize")
cli_options = [option for option in table if option["faces"]["cli"]]
check(len(cli_options) > 30, f"the table gives the CLI its options ({len(cli_options)})")
for option in cli_options:
    flag = option["faces"]["cli"]
    if flag not in diarize:
        check(False, f"parley diarize lacks {flag} (the table's {option['name']})")
        continue
    if option["name"] not in DEFAULT_BY_INPUT:
        check(same_default(option, diarize[flag]),
              f"parley diarize {flag}: default {diarize[flag]!r}, the table's "
              f"{option['default']!r}")

serve = help_flags("serve")
FIXED_AT_START = {"output", "execution", "placement", "models", "layout"}
for option in cli_options:
    flag = option["faces"]["cli"]
    if option["target"] in FIXED_AT_START or option["name"] in ("voiceprints",
                                                                 "identify_threshold"):
        check(flag in serve and (option["name"] in DEFAULT_BY_INPUT or
                                 same_default(option, serve[flag])),
              f"parley serve {flag}: {serve.get(flag, 'missing')!r}, the table's "
              f"{option['default']!r}")

# The live stream's own table (`parley options --stream`): `parley stream` offers each option of
# its CLI face under the table's flag with the table's default (--max-speakers is the batch
# table's flag, shared with --final-recluster's clustering: its help says the stream's default),
# and the WebSocket's query parameters in the OpenAPI document have the table's schema.
stream_table = json.loads(run("options", "--stream", "--json").stdout)
stream_help = help_flags("stream")
check(len(stream_table) >= 9, f"the stream table lists its options ({len(stream_table)})")
for option in stream_table:
    flag = option["faces"]["cli"]
    if not flag:
        continue
    if flag not in stream_help:
        check(False, f"parley stream lacks {flag} (the stream table's {option['name']})")
    elif option["name"] != "max_speakers":
        check(same_default(option, stream_help[flag]),
              f"parley stream {flag}: default {stream_help[flag]!r}, the table's "
              f"{option['default']!r}")
stream_speakers = next(o for o in stream_table if o["name"] == "max_speakers")
check(f"(default {stream_speakers['default']})" in run("stream", "--help").stdout,
      "parley stream --help gives the stream's --max-speakers default")
openapi = json.loads(run("options", "--openapi").stdout)
query = {parameter["name"]: parameter["schema"]
         for parameter in openapi["paths"]["/v1/stream"]["get"]["parameters"]
         if parameter["in"] == "query"}
for option in stream_table:
    if not option["faces"]["server"]:
        continue
    name = "rate" if option["name"] == "sample_rate" else option["name"]
    schema = query.get(name, {})
    kind = {"flag": "boolean", "choice": "string"}.get(option["type"], option["type"])
    check(schema.get("type") == kind and schema.get("minimum") == option["minimum"] and
          schema.get("maximum") == option["maximum"] and schema.get("default") == option["default"]
          and schema.get("enum", []) == option["choices"],
          f"GET /v1/stream's {name}: {schema}, the stream table's {option}")

# The engine decides what options mean together; the user reads its message in flags (before
# any model loads: a second of silence is enough).
with wave.open(os.path.join(work, "silence.wav"), "wb") as silence:
    silence.setnchannels(1)
    silence.setsampwidth(2)
    silence.setframerate(16000)
    silence.writeframes(bytes(32000))
for arguments, message in [
        (["--ahc-threshold", "0.5"], "parley: error: --ahc-threshold: applies to clustering ahc "
                                     "only"),
        (["--force-gpu", "--provider", "cpu"], "parley: error: --force-gpu: contradicts "
                                               "--provider cpu"),
        (["--provider", "metal"], "parley: error: --provider: unknown execution provider "
                                  "'metal'")]:
    printed = run("diarize", "silence.wav", *arguments)
    check(printed.returncode != 0 and message in printed.stderr,
          f"parley diarize {' '.join(arguments)}: {printed.stderr!r} lacks {message!r}")

if failures:
    sys.exit("FAILED:\n  " + "\n  ".join(failures))
print("ok")
