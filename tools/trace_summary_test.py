#!/usr/bin/env python3
"""CTest: a corpus run's trace (`parley diarize ... --trace FILE`) and tools/trace_summary.py.

  trace_summary_test.py PARLEY WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR: shared data)

1. The summary of a trace written here, whose sums are known: busy time as the union of the model
   calls of a device's engines, the gaps with what ran in them, the stages, waits and queues.
2. Three recordings through the CLI on the CPU with --trace: the trace is valid Chrome JSON whose
   events cover every recording's stages in order, a thread's events nest or follow each other,
   the RTTMs equal those of the same run without --trace, and the summary prints its sections
   (exit 77, skipped, without ../shared)."""
import json
import os
import shutil
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace_summary.py")
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def summary(path, *extra):
    done = subprocess.run([sys.executable, TOOL, path, *extra], capture_output=True, text=True)
    check(done.returncode == 0, "trace_summary.py %s: exit %d: %s" % (path, done.returncode,
                                                                      done.stderr))
    return done.stdout


def x(name, pid, tid, start, end, cat="stage", **args):
    return {"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": start * 1e6,
            "dur": (end - start) * 1e6, "args": args}


def known_trace(path):
    """Two engines on GPU 0, one on GPU 1; every number of the summary follows from these."""
    meta = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
            for pid, name in ((0, "corpus"), (1, "engine 0 (gpu 0)"), (2, "engine 1 (gpu 0)"),
                              (3, "engine 2 (gpu 1)"))]
    meta += [{"ph": "M", "name": "process_labels", "pid": pid, "tid": 0,
              "args": {"labels": "device " + device}}
             for pid, device in ((1, "gpu 0"), (2, "gpu 0"), (3, "gpu 1"))]
    meta += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1,
              "args": {"name": "engine 0: networks"}},
             {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "decoder 0"}}]
    events = [
        x("seg.onnx", 1, 10, 0.0, 1.0, "model"),
        x("seg.onnx", 1, 10, 1.5, 2.0, "model"),
        x("waiting for decoded audio", 1, 1, 1.0, 1.5, "wait"),
        x("seg.onnx", 2, 10, 0.2, 0.8, "model"),
        x("trunk.onnx", 3, 1, 0.0, 4.0, "model"),
        x("decode", 0, 1, 0.9, 1.6, recording="a.wav"),
        {"name": "waiting for an engine", "cat": "wait", "ph": "b", "pid": 0, "tid": 0,
         "id": "0x1", "ts": 1.6e6, "args": {"recording": "a.wav"}},
        {"name": "waiting for an engine", "cat": "wait", "ph": "e", "pid": 0, "tid": 0,
         "id": "0x1", "ts": 1.8e6, "args": {}},
        {"name": "decoded recordings waiting", "ph": "C", "pid": 0, "tid": 0, "ts": 0.0,
         "args": {"value": 2}},
        {"name": "decoded recordings waiting", "ph": "C", "pid": 0, "tid": 0, "ts": 2.0e6,
         "args": {"value": 0}},
    ]
    with open(path, "w") as stream:
        json.dump({"traceEvents": meta + events, "displayTimeUnit": "ms"}, stream)


def check_known(work):
    path = os.path.join(work, "known.json")
    known_trace(path)
    data = json.loads(summary(path, "--json"))
    check(abs(data["wall_seconds"] - 4.0) < 1e-9, "wall: %r" % data["wall_seconds"])
    devices = {device["name"]: device for device in data["devices"]}
    check(sorted(devices) == ["gpu 0", "gpu 1"], "devices: %r" % sorted(devices))
    gpu0 = devices.get("gpu 0", {})
    # [0, 1] and [0.2, 0.8] and [1.5, 2]: 1.5 s of 4.
    check(abs(gpu0.get("busy_seconds", 0) - 1.5) < 1e-9, "gpu 0 busy: %r" % gpu0.get("busy_seconds"))
    check(gpu0.get("model_calls") == 3, "gpu 0 model calls: %r" % gpu0.get("model_calls"))
    gaps = gpu0.get("gaps", [])
    check([round(gap["seconds"], 9) for gap in gaps] == [2.0, 0.5],
          "gpu 0 gaps: %r" % [gap["seconds"] for gap in gaps])
    if len(gaps) == 2:
        here = {item["stage"]: item["seconds"] for item in gaps[1]["here"]}
        shared = {item["stage"]: item["seconds"] for item in gaps[1]["shared"]}
        check(abs(here.get("waiting for decoded audio", 0) - 0.5) < 1e-9, "gap 1.0-1.5: %r" % here)
        check(abs(shared.get("decode", 0) - 0.5) < 1e-9, "gap 1.0-1.5, shared: %r" % shared)
        check(gaps[1]["here"][0]["where"] == "engine 0: networks", "gap's track: %r" % gaps[1])
    check(abs(devices.get("gpu 1", {}).get("busy_share", 0) - 1.0) < 1e-9, "gpu 1 always busy")
    engines = {engine["name"]: engine for engine in data["engines"]}
    check(abs(engines.get("engine 1 (gpu 0)", {}).get("busy_seconds", 0) - 0.6) < 1e-9,
          "engine 1 busy: %r" % engines.get("engine 1 (gpu 0)"))
    waits = {wait["stage"]: wait for wait in data["shared"]["waits"]}
    check(abs(waits.get("waiting for an engine", {}).get("seconds", 0) - 0.2) < 1e-9,
          "wait for an engine: %r" % waits)
    queue = data["queues"].get("decoded recordings waiting", {})
    check(queue.get("max") == 2 and abs(queue.get("mean", 0) - 1.0) < 1e-9, "queue: %r" % queue)
    text = summary(path)
    for section in ("run: wall 4.000 s, 2 device(s), 3 engine(s)", "== device: gpu 0",
                    "busy (union of 3 model calls) 1.500 s = 37.5 %", "== engine: engine 0 (gpu 0)",
                    "longest gaps with no model call in flight", "waiting for decoded audio",
                    "== shared stages", "== queues"):
        check(section in text, "summary text lacks %r:\n%s" % (section, text))


def events_by_recording(trace):
    """{recording: [(name, start, end)]} of the complete and asynchronous events naming it."""
    found = {}
    begins = {}
    for event in trace["traceEvents"]:
        args = event.get("args", {})
        names = [args["recording"]] if "recording" in args else args.get("recordings", [])
        # By file name: the engine names a recording by its path as the run planned it.
        names = [os.path.basename(name) for name in names]
        if event["ph"] == "X":
            for name in names:
                found.setdefault(name, []).append(
                    (event["name"], event["ts"], event["ts"] + event["dur"]))
        elif event["ph"] == "b":
            begins[event["id"]] = event
        elif event["ph"] == "e" and event["id"] in begins:
            begin = begins.pop(event["id"])
            found.setdefault(os.path.basename(begin["args"]["recording"]), []).append(
                (begin["name"], begin["ts"], event["ts"]))
    return found


def check_threads_nest(trace):
    """On each thread, an event starts after the one before has ended or lies inside it."""
    threads = {}
    for event in trace["traceEvents"]:
        if event["ph"] == "X":
            threads.setdefault((event["pid"], event["tid"]), []).append(
                (event["ts"], -event["dur"], event["name"]))
    tolerance = 0.01  # microseconds: times are written to the nanosecond
    for track, events in threads.items():
        stack = []
        for start, negative, name in sorted(events):
            end = start - negative
            while stack and start >= stack[-1][0] - tolerance:
                stack.pop()
            if stack:
                check(end <= stack[-1][0] + tolerance,
                      "thread %r: %s [%.3f, %.3f] overlaps %s ending %.3f" %
                      (track, name, start, end, stack[-1][1], stack[-1][0]))
            stack.append((end, name))


def check_cli(parley, write_model, work):
    shared = os.environ.get("PARLEY_SHARED_DIR", "")
    sources = [os.path.join(shared, "eval", part) for part in
               ("pyannote-sample/sample.wav", "falcon-test/test.wav")]
    segmentation = os.path.join(shared, "models", "segmentation-3.0-fp16.onnx")
    plda = os.path.join(shared, "models", "plda")
    if not all(os.path.exists(path) for path in sources + [segmentation, plda]):
        return False
    models = os.path.join(work, "models")
    audio = os.path.join(work, "audio")
    os.makedirs(models)
    os.makedirs(audio)
    os.symlink(segmentation, os.path.join(models, "segmentation-3.0-fp16.onnx"))
    os.symlink(plda, os.path.join(models, "plda"))
    embedding = os.path.join(models, "tiny-embedding.onnx")
    subprocess.run([write_model, embedding], check=True)
    recordings = []
    for k, source in enumerate(sources + sources[:1]):
        recordings.append(os.path.join(audio, "rec%d.wav" % k))
        shutil.copy(source, recordings[-1])
    flags = ["--models", models, "--embedding-model", embedding, "--clustering", "ahc",
             "--threads", "2", "--jobs", "2", "-q"]
    runs = {}
    trace_path = os.path.join(work, "trace.json")
    for name, extra in (("plain", []), ("traced", ["--trace", trace_path])):
        done = subprocess.run([parley, "diarize", *recordings, *flags, *extra],
                              capture_output=True, text=True)
        check(done.returncode == 0, "parley diarize %s: exit %d: %s" % (name, done.returncode,
                                                                        done.stderr))
        runs[name] = done.stdout
    check(runs["plain"] and runs["plain"] == runs["traced"], "RTTMs differ with --trace")
    # A destination that cannot be written is refused before any model loads.
    done = subprocess.run([parley, "diarize", *recordings, *flags, "--trace",
                           os.path.join(work, "no-such-folder", "trace.json")],
                          capture_output=True, text=True)
    check(done.returncode != 0 and "--trace" in done.stderr, "unwritable --trace: %r" % done.stderr)
    if not os.path.exists(trace_path):
        check(False, "no trace written")
        return True
    with open(trace_path) as stream:
        trace = json.load(stream)
    check(isinstance(trace.get("traceEvents"), list), "traceEvents is a list")
    check_threads_nest(trace)
    per_recording = events_by_recording(trace)
    # Each recording's stages, in order: decoded, waiting for an engine, in the networks (its
    # segmentation calls and its embedding inside), clustered, reconstructed, written.
    order = ["decode", "waiting for an engine", "networks", "clustering", "reconstruction",
             "writing"]
    for recording in map(os.path.basename, recordings):
        events = per_recording.get(recording, [])
        first = {}
        last = {}
        for name, start, end in events:
            first[name] = min(first.get(name, start), start)
            last[name] = max(last.get(name, end), end)
        for name in order + ["segmentation call", "embedding"]:
            check(name in first, "%s: no %r event" % (recording, name))
        if not all(name in first for name in order + ["segmentation call", "embedding"]):
            continue
        for before, after in zip(order, order[1:]):
            check(last[before] <= first[after] + 0.01,
                  "%s: %s ends at %.1f after %s starts at %.1f" %
                  (recording, before, last[before], after, first[after]))
        check(first["networks"] <= first["segmentation call"] and
              last["embedding"] <= last["networks"] + 0.01,
              "%s: segmentation and embedding inside the networks" % recording)
    models_run = [event for event in trace["traceEvents"]
                  if event["ph"] == "X" and event.get("cat") == "model"]
    check(any(event["name"].startswith("segmentation-3.0") for event in models_run),
          "segmentation model calls traced")
    check(any(event["name"].startswith("tiny-embedding") for event in models_run),
          "embedding model calls traced")
    text = summary(trace_path)
    for section in ("== device: cpu", "== engine: engine 0 (cpu)", "busy (union of",
                    "longest gaps with no model call in flight", "segmentation call",
                    "== shared stages", "decode", "waiting for an engine", "== queues",
                    "decoded recordings waiting"):
        check(section in text, "summary of the CLI's trace lacks %r:\n%s" % (section, text))
    return True


def main():
    parley, write_model, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    check_known(work)
    ran_cli = check_cli(parley, write_model, work)
    if failures:
        sys.exit("FAILED:\n  " + "\n  ".join(failures))
    if not ran_cli:
        print("skipped the CLI's run: ../shared is absent")
        sys.exit(77)
    print("ok")


if __name__ == "__main__":
    main()
