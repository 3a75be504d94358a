#!/usr/bin/python3
"""Times parley against sherpa-onnx's offline speaker diarization on the same recording, with
the same segmentation model and the same speaker-embedding model, in the same run.

Run through scripts/bench-peers, which builds and installs what is missing first. Rows:

  equal step S   sherpa-onnx with window_shift_ratio S/10 and --threads threads per model,
                 parley with --step S --threads N (one row per parley variant)
  defaults       each system with no option at all: sherpa-onnx 1 thread per model, shift 0.1
                 (1 s), threshold 0.5; parley all cores, 1 s step, PLDA + VBx

Every run is a separate process under /usr/bin/time (whole-process wall time, CPU time, peak
RSS); each system's own timing without process start-up and model loading is read from its
output (parley's summary line; sherpa-onnx's debug log and the harness's timer around
`process`). Writes, under --out (default build/bench/peers/<recording>): the RTTM from each
run, one JSON per run in
the `parley eval --json` schema ("parley-eval/1", extra fields added), peers.json with every
row, and peers.md with the table (also printed).
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = "parley-eval/2"


def fail(message):
    sys.exit(f"bench-peers: {message}")


def run_capture(command, **kwargs):
    return subprocess.run(command, check=False, capture_output=True, text=True, **kwargs)


def load_average():
    with open("/proc/loadavg", encoding="ascii") as stream:
        return " ".join(stream.read().split()[:3])


def machine_description():
    model = "unknown CPU"
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo", encoding="ascii") as stream:
        memory_kib = int(stream.readline().split()[1])
    return (f"{os.cpu_count()} cores ({model}), {memory_kib / 1048576:.0f} GiB, "
            f"{platform.system()} {platform.release()}")


# --- the recording and its reference ---------------------------------------------------------

def eval_parts(eval_dir):
    parts = []
    for folder, _, files in os.walk(eval_dir):
        parts += [os.path.join(folder, name) for name in files if name.endswith(".wav")]
    # The order of scripts/bench-long-recording: `find | LC_ALL=C sort` (byte order).
    return sorted(parts, key=lambda path: path.encode("utf-8"))


def build_recording(minutes, eval_dir, out_dir):
    """eval-<minutes>min.wav as scripts/bench-long-recording makes it: one pass of every eval
    recording as 16 kHz mono 16-bit, repeated and cut to the length."""
    parts = eval_parts(eval_dir)
    if not parts:
        fail(f"no recordings under {eval_dir}")
    os.makedirs(out_dir, exist_ok=True)
    once = os.path.join(out_dir, "eval-once.wav")
    if not os.path.exists(once):
        subprocess.run(["sox", *parts, "-r", "16000", "-c", "1", "-b", "16", once], check=True)
    long = os.path.join(out_dir, f"eval-{minutes}min.wav")
    if not os.path.exists(long):
        once_seconds = float(run_capture(["soxi", "-D", once]).stdout)
        repeats = max(1, -(-int(minutes * 60) // int(once_seconds)))
        subprocess.run(["sox", *([once] * (repeats + 1)), long, "trim", "0", str(minutes * 60)],
                       check=True)
    return parts, once, long


def plain_name(text):
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def reference_turns(parts):
    """Reference turns of each part (by file stem; the eval set's RTTMs name one file 'trn00'
    whose WAV is 'trñ00.wav', so names are also compared without accents), and the name its
    speakers are known by: the folder when the part's RTTM annotates several files (a corpus
    such as AMI names each person once across files), the file otherwise."""
    turns_by_uri, shared_rttm = {}, set()
    for part in parts:
        folder = os.path.dirname(part)
        for name in os.listdir(folder):
            if not name.endswith(".rttm"):
                continue
            uris = set()
            with open(os.path.join(folder, name), encoding="utf-8") as stream:
                for line in stream:
                    fields = line.split()
                    if len(fields) >= 8 and fields[0] == "SPEAKER":
                        uris.add(fields[1])
                        turns_by_uri.setdefault((folder, fields[1]), set()).add(
                            (float(fields[3]), float(fields[4]), fields[7]))
            if len(uris) > 1:
                shared_rttm.update((folder, uri) for uri in uris)
    result = []
    for part in parts:
        folder, stem = os.path.dirname(part), os.path.splitext(os.path.basename(part))[0]
        key = (folder, stem) if (folder, stem) in turns_by_uri else (folder, plain_name(stem))
        turns = turns_by_uri.get(key)
        tag = os.path.basename(folder) if key in shared_rttm else plain_name(stem)
        result.append((sorted(turns), tag) if turns else None)
    return result


def write_reference(parts, once, long, uri, path):
    """Shifts every part's reference turns to its place in the concatenation (offsets from
    sample counts, so exact) and repeats them as the recording repeats the pass. Speakers keep
    one label in every repetition. None when some part has no reference."""
    turns = reference_turns(parts)
    if any(part_turns is None for part_turns in turns):
        return None
    samples = [int(run_capture(["soxi", "-s", part]).stdout) for part in parts]
    once_samples = int(run_capture(["soxi", "-s", once]).stdout)
    long_seconds = int(run_capture(["soxi", "-s", long]).stdout) / 16000
    if sum(samples) != once_samples:
        return None  # some part was resampled: offsets would not be exact
    lines = []
    repetition_start = 0.0
    while repetition_start < long_seconds:
        offset = repetition_start
        for count, (part_turns, tag) in zip(samples, turns):
            for start, duration, speaker in part_turns:
                begin, end = offset + start, min(offset + start + duration, long_seconds)
                if end > begin:
                    lines.append(f"SPEAKER {uri} 1 {begin:.3f} {end - begin:.3f} <NA> <NA> "
                                 f"{tag}:{speaker} <NA> <NA>\n")
            offset += count / 16000
        repetition_start += once_samples / 16000
    with open(path, "w", encoding="utf-8") as stream:
        stream.writelines(lines)
    return path


# --- runs ------------------------------------------------------------------------------------

def timed(command, env=None):
    """Runs command under /usr/bin/time; returns (completed process, wall, user+sys, peak MiB)."""
    time_file = os.path.join(ARGS.out, ".time")
    before = load_average()
    completed = subprocess.run(["/usr/bin/time", "-o", time_file, "-f", "%e %U %S %M", *command],
                               check=False, capture_output=True, text=True, env=env)
    if completed.returncode != 0:
        fail(f"{shlex.join(command)} failed (exit {completed.returncode}):\n"
             f"{completed.stderr[-3000:]}")
    with open(time_file, encoding="ascii") as stream:
        wall, user, system, peak_kib = stream.read().split()[-4:]
    return completed, {
        "process_wall_seconds": float(wall),
        "cpu_seconds": float(user) + float(system),
        "peak_rss_mib": int(peak_kib) / 1024,
        "load_average_before": before,
        "load_average_after": load_average(),
    }


PARLEY_SUMMARY = re.compile(
    r"(?P<uri>\S+): (?P<audio>[\d.]+) s of audio, (?P<speakers>\d+) speakers, (?P<turns>\d+) "
    r"turns in (?P<wall>[\d.]+) s .*\[(?P<stages>[^\]]*)\]\s*$", re.MULTILINE)
SHERPA_STAGE = re.compile(r"OfflineSpeakerDiarization: (segmentation|embedding|clustering) "
                          r"([\d.]+) s")


def run_parley(label, wav, rttm, options):
    command = [ARGS.parley, "diarize", wav, "--models", ARGS.models,
               "--segmentation-model", ARGS.segmentation, "--embedding-model", ARGS.embedding,
               "--out", rttm, *options]
    completed, measured = timed(command)
    match = None
    for match in PARLEY_SUMMARY.finditer(completed.stderr):
        pass
    if match is None:
        fail(f"no summary line from parley:\n{completed.stderr[-2000:]}")
    stages = {}
    for item in match.group("stages").split(", "):
        name, seconds = item.rsplit(" ", 1)
        stages[name] = float(seconds.rstrip("s"))
    return {
        "system": "parley", "label": label, "command": shlex.join(command),
        "audio_seconds": float(match.group("audio")),
        "wall_seconds": float(match.group("wall")),  # decode + diarize, models loaded
        "stage_seconds": stages,
        "speakers": int(match.group("speakers")), "turns": int(match.group("turns")),
        **measured,
    }


def run_sherpa(label, wav, rttm, options):
    command = ["node", os.path.join(ROOT, "bench", "peers", "sherpa", "diarize.js"),
               "--peers", ARGS.peers, "--segmentation", ARGS.sherpa_segmentation,
               "--embedding", ARGS.sherpa_embedding, "--wav", wav, "--rttm", rttm,
               "--uri", os.path.splitext(os.path.basename(wav))[0], *options]
    completed, measured = timed(command)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    if not lines:
        fail(f"no result line from sherpa-onnx:\n{completed.stderr[-2000:]}")
    own = json.loads(lines[-1])
    stages = {"decode": own["decode_seconds"]}
    for name, seconds in SHERPA_STAGE.findall(completed.stderr):
        stages[name] = float(seconds)
    return {
        "system": f"sherpa-onnx {own['version']}", "label": label,
        "command": shlex.join(command),
        "audio_seconds": own["audio_seconds"],
        "wall_seconds": own["decode_seconds"] + own["process_seconds"],
        "model_load_seconds": own["model_load_seconds"],
        "stage_seconds": stages, "speakers": own["speakers"], "turns": own["turns"],
        "sherpa_config": own["config"], **measured,
    }


def score(row, rttm):
    row["rttm"] = rttm
    if not ARGS.reference:
        return
    completed = run_capture([ARGS.parley, "score", "--ref", ARGS.reference, "--hyp", rttm,
                             "--json"])
    if completed.returncode != 0:
        fail(f"parley score failed: {completed.stderr.strip()}")
    row["score"] = json.loads(completed.stdout)["total"]


def eval_document(row, wav):
    """One run in the `parley eval --json` schema, so `parley eval --compare` can plot it."""
    scores = row.get("score") or {}
    total_speech = scores.get("total", 0.0)
    file_entry = {
        "uri": os.path.splitext(os.path.basename(wav))[0], "audio": wav, "status": "ok",
        "der": scores.get("der", 0.0), "missed": scores.get("missed", 0.0),
        "false_alarm": scores.get("false_alarm", 0.0),
        "confusion": scores.get("confusion", 0.0), "total": total_speech,
        "missed_seconds": scores.get("missed", 0.0) * total_speech,
        "false_alarm_seconds": scores.get("false_alarm", 0.0) * total_speech,
        "confusion_seconds": scores.get("confusion", 0.0) * total_speech,
        "audio_seconds": row["audio_seconds"], "wall_seconds": row["wall_seconds"],
        "real_time_factor": row["wall_seconds"] / row["audio_seconds"],
        "speed": row["audio_seconds"] / row["wall_seconds"],
        "stage_seconds": row["stage_seconds"], "speakers": row["speakers"],
        "fingerprint": hashlib.sha256(row["command"].encode()).hexdigest(), "resumed": False,
        "process_wall_seconds": row["process_wall_seconds"], "cpu_seconds": row["cpu_seconds"],
        "peak_rss_mib": row["peak_rss_mib"], "scored": bool(scores),
    }
    return {
        "schema": SCHEMA, "system": f"{row['system']} ({row['label']})",
        "settings": {"command": row["command"], "label": row["label"]},
        "scoring": {"collar": 0.0, "skip_overlap": False, "uem": False},
        "files": [file_entry],
        "total": {key: file_entry[key] for key in (
            "der", "missed", "false_alarm", "confusion", "total", "audio_seconds",
            "wall_seconds", "real_time_factor", "speed", "stage_seconds")} | {"files": 1, "scored": int(bool(scores)),
                                                        "failed": 0},
    }


# --- the table -------------------------------------------------------------------------------

def per_hour(seconds, audio_seconds):
    return seconds * 3600.0 / audio_seconds


def table(rows):
    header = ("| comparison | system | options | wall (s) | s per audio hour "
              "| real-time factor (wall ÷ audio) | own time (s) | own s per audio hour | decode / segmentation / embedding / "
              "clustering (s) | CPU (s) | peak RSS (MiB) | speakers | DER "
              "| sherpa-onnx ÷ parley: wall / own / CPU | load average before → after |")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for row in rows:
        audio = row["audio_seconds"]
        stages = row["stage_seconds"]
        ratio = ""
        if row.get("versus"):
            peer = row["versus"]
            ratio = (f"{peer['process_wall_seconds'] / row['process_wall_seconds']:.2f}x / "
                     f"{peer['wall_seconds'] / row['wall_seconds']:.2f}x / "
                     f"{peer['cpu_seconds'] / row['cpu_seconds']:.2f}x")
        der = f"{100 * row['score']['der']:.1f} %" if row.get("score") else "n/a"
        stage_text = " / ".join(f"{stages[name]:.2f}" if name in stages else "-" for name in (
            "decode", "segmentation", "embedding", "clustering"))
        reused = " (same run as above)" if row.get("reused") else ""
        lines.append(
            f"| {row['comparison']} | {row['system']} | `{row['options']}`{reused} "
            f"| {row['process_wall_seconds']:.2f} "
            f"| {per_hour(row['process_wall_seconds'], audio):.0f} "
            f"| {row['process_wall_seconds'] / audio:.3f} "
            f"| {row['wall_seconds']:.2f} | {per_hour(row['wall_seconds'], audio):.0f} "
            f"| {stage_text} | {row['cpu_seconds']:.1f} | {row['peak_rss_mib']:.0f} "
            f"| {row['speakers']} | {der} | {ratio} "
            f"| {row['load_average_before']} → {row['load_average_after']} |")
    return "\n".join(lines)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=int, default=10,
                        help="length of the recording built from ../shared/eval (default 10)")
    parser.add_argument("--wav", help="diarize this 16 kHz WAV instead (no reference unless "
                                      "--reference)")
    parser.add_argument("--reference", help="reference RTTM for --wav")
    parser.add_argument("--steps", default="1",
                        help="comma-separated chunk steps in seconds for the equal-step rows "
                             "(default 1; sherpa-onnx gets window_shift_ratio = step / 10)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="threads per model for both systems in the equal-step rows "
                             "(default: all cores)")
    parser.add_argument("--parley-args", action="append", default=[],
                        help="extra `parley diarize` options for one more parley row in every "
                             "comparison, e.g. \"--embedding-mode exact\" (repeatable)")
    parser.add_argument("--num-speakers", type=int,
                        help="fixed number of speakers for both (sherpa-onnx num_clusters, "
                             "parley --num-speakers); default: each system's own estimate")
    parser.add_argument("--no-defaults", action="store_true",
                        help="skip the rows with each system at its defaults")
    parser.add_argument("--out", help="folder for the results (default: "
                                      "build/bench/peers/<recording name>)")
    parser.add_argument("--eval-dir", default=os.path.join(ROOT, "..", "shared", "eval"))
    parser.add_argument("--parley", default=os.path.join(ROOT, "build", "parley"))
    parser.add_argument("--models", default=os.path.join(ROOT, "build", "models"))
    parser.add_argument("--peers", default=os.path.join(ROOT, "build", "peers"))
    parser.add_argument("--segmentation", default="segmentation-3.0-fp32-folded.onnx",
                        help="model file in --models (default segmentation-3.0-fp32-folded.onnx)")
    parser.add_argument("--embedding", default="resnet34-speed-twin.onnx",
                        help="model file in --models (default resnet34-speed-twin.onnx)")
    args = parser.parse_args(argv)
    args.sherpa_segmentation = os.path.join(args.peers, "models", "sherpa-" + args.segmentation)
    args.sherpa_embedding = os.path.join(args.peers, "models", "sherpa-" + args.embedding)
    args.segmentation = os.path.join(args.models, args.segmentation)
    args.embedding = os.path.join(args.models, args.embedding)
    for path in (args.parley, args.segmentation, args.embedding, args.sherpa_segmentation,
                 args.sherpa_embedding):
        if not os.path.exists(path):
            fail(f"{path} is missing: run scripts/bench-peers (it builds and installs what is "
                 "missing) or scripts/install-peers")
    args.steps = [float(step) for step in args.steps.split(",") if step]
    for step in args.steps:
        if not 0 < step <= 10:
            fail(f"--steps: {step} is not in (0, 10] seconds")
    return args


def effective_settings(system, options):
    """What a run does, with each system's defaults filled in, so that two rows asking for the
    same thing are run once."""
    defaults = {"sherpa": {"--threads": "1", "--window-shift-ratio": "0.1"},
                "parley": {"--step": "1", "--threads": str(os.cpu_count())}}[system]
    settings, extra, index = dict(defaults), [], 0
    while index < len(options):
        if options[index] in defaults and index + 1 < len(options):
            settings[options[index]] = f"{float(options[index + 1]):g}"
            index += 2
        else:
            extra.append(options[index])
            index += 1
    settings = {key: f"{float(value):g}" for key, value in settings.items()}
    return system, tuple(sorted(settings.items())), tuple(extra)


def step_text(step):
    return f"{step:g}"


def main(argv):
    global ARGS
    ARGS = parse_arguments(argv)
    parts = once = None
    if ARGS.wav:
        wav = os.path.abspath(ARGS.wav)
    else:
        parts, once, wav = build_recording(ARGS.minutes, ARGS.eval_dir,
                                           os.path.join(ROOT, "build", "bench"))
    ARGS.out = ARGS.out or os.path.join(ROOT, "build", "bench", "peers",
                                        os.path.splitext(os.path.basename(wav))[0])
    os.makedirs(ARGS.out, exist_ok=True)
    if parts and not ARGS.reference:
        ARGS.reference = write_reference(
            parts, once, wav, os.path.splitext(os.path.basename(wav))[0],
            os.path.join(ARGS.out, os.path.basename(wav)[:-4] + ".ref.rttm"))
    stem = os.path.splitext(os.path.basename(wav))[0]
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"bench-peers: {wav} on {machine_description()}; load average {load_average()}",
          file=sys.stderr)

    variants = [[]] + [shlex.split(extra) for extra in ARGS.parley_args]
    speakers_parley = ["--num-speakers", str(ARGS.num_speakers)] if ARGS.num_speakers else []
    speakers_sherpa = ["--num-clusters", str(ARGS.num_speakers)] if ARGS.num_speakers else []
    plan = []  # (comparison, system, options)
    for step in ARGS.steps:
        comparison = f"equal: step {step_text(step)} s, {ARGS.threads} threads"
        plan.append((comparison, "sherpa", ["--threads", str(ARGS.threads),
                                            "--window-shift-ratio", f"{step / 10:g}",
                                            *speakers_sherpa]))
        for variant in variants:
            plan.append((comparison, "parley", ["--step", step_text(step), "--threads",
                                                str(ARGS.threads), *speakers_parley, *variant]))
    if not ARGS.no_defaults:
        plan.append(("defaults", "sherpa", [*speakers_sherpa]))
        for variant in variants:
            plan.append(("defaults", "parley", [*speakers_parley, *variant]))

    rows, done = [], {}
    for index, (comparison, system, options) in enumerate(plan):
        key = effective_settings(system, options)
        if key in done:  # e.g. parley's defaults are the equal-step row at 1 s on all cores
            row = dict(done[key], comparison=comparison, label=comparison,
                       options=shlex.join(options) or "(defaults)", reused=True)
            rows.append(row)
            print(f"bench-peers: [{index + 1}/{len(plan)}] {comparison}: {system} "
                  f"{shlex.join(options)}: same settings as an earlier run, reused",
                  file=sys.stderr)
            continue
        name = f"{stem}.{index:02d}.{system}"
        rttm = os.path.join(ARGS.out, name + ".rttm")
        print(f"bench-peers: [{index + 1}/{len(plan)}] {comparison}: {system} "
              f"{shlex.join(options)}", file=sys.stderr)
        row = run_sherpa(comparison, wav, rttm, options) if system == "sherpa" else \
            run_parley(comparison, wav, rttm, options)
        score(row, rttm)
        row.update(comparison=comparison, options=shlex.join(options) or "(defaults)")
        rows.append(row)
        done[key] = row
        with open(os.path.join(ARGS.out, name + ".json"), "w", encoding="utf-8") as stream:
            json.dump(eval_document(row, wav), stream, indent=2)
        print(f"bench-peers:   process {row['process_wall_seconds']:.2f} s, own "
              f"{row['wall_seconds']:.2f} s, peak {row['peak_rss_mib']:.0f} MiB", file=sys.stderr)
    for row in rows:
        if row["system"] == "parley":
            peer = next(other for other in rows if other["comparison"] == row["comparison"]
                        and other["system"].startswith("sherpa"))
            row["versus"] = {key: peer[key] for key in ("process_wall_seconds", "wall_seconds",
                                                      "cpu_seconds")}

    text = table(rows)
    notes = (f"Recording: {wav} ({rows[0]['audio_seconds']:.1f} s). Machine: "
             f"{machine_description()}. Date: {started:%Y-%m-%d %H:%M} UTC. Command: "
             f"scripts/bench-peers {shlex.join(argv)}. Reference: {ARGS.reference or 'none'}.")
    print(notes)
    print(text)
    with open(os.path.join(ARGS.out, "peers.md"), "w", encoding="utf-8") as stream:
        stream.write(notes + "\n\n" + text + "\n")
    with open(os.path.join(ARGS.out, "peers.json"), "w", encoding="utf-8") as stream:
        json.dump({"schema": "parley-peers/1", "date": started.isoformat(timespec="seconds"),
                   "machine": machine_description(), "recording": wav,
                   "reference": ARGS.reference, "command": ["scripts/bench-peers", *argv],
                   "rows": rows}, stream, indent=2)
    return 0


ARGS = None

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
