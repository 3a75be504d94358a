#!/usr/bin/env python3
"""Sums a corpus run's trace (`parley diarize --manifest ... --trace FILE`, docs/corpus.md):
where each engine's and each device's time went, and what ran while no model call was in flight.

  python3 tools/trace_summary.py TRACE.json [--gaps N] [--json]

The trace is Chrome's trace-event JSON (core/trace.h writes it; Perfetto and chrome://tracing
open it too). Printed, per device (the engines of one GPU, or the CPU) and per engine:
  - the wall time (from the run's start to its last event);
  - busy: the union of the model calls' times (category "model"), the host's view of the
    device's busy time, as seconds and a share of the wall time;
  - each stage's total and share of the wall time (events nest: an outer stage holds its inner
    ones, so the shares add up to more than 100 %);
  - the longest gaps in which no model call of the device (or engine) was in flight, each with
    the stages that ran in it on that engine or device, and in the corpus's shared threads
    (decoding, clustering, writing);
  - what ran, summed over all those gaps, on the unit's own tracks;
then the corpus's shared stages and each recording's wait for an engine, and the queues' lengths.

Python's standard library only, any Python 3.8 or later."""
import argparse
import collections
import json
import sys

MODEL = "model"


class Event:
    __slots__ = ("name", "category", "pid", "tid", "start", "end", "args")

    def __init__(self, name, category, pid, tid, start, end, args):
        self.name, self.category, self.pid, self.tid = name, category, pid, tid
        self.start, self.end, self.args = start, end, args

    @property
    def seconds(self):
        return self.end - self.start


def load(path):
    """The trace's complete events, asynchronous spans (as events on tid None), counters
    {name: [(time, value)]}, process names, process labels and thread names; times in seconds."""
    with open(path, encoding="utf-8") as stream:
        document = json.load(stream)
    raw = document["traceEvents"] if isinstance(document, dict) else document
    events, counters = [], collections.defaultdict(list)
    processes, labels, threads = {}, {}, {}
    begins = {}
    for event in raw:
        phase = event.get("ph")
        pid, tid = event.get("pid", 0), event.get("tid", 0)
        start = float(event.get("ts", 0.0)) / 1e6
        if phase == "X":
            events.append(Event(event["name"], event.get("cat", ""), pid, tid, start,
                                start + float(event.get("dur", 0.0)) / 1e6, event.get("args", {})))
        elif phase == "b":
            begins[(pid, event.get("cat"), event["name"], event.get("id"))] = (start, event)
        elif phase == "e":
            key = (pid, event.get("cat"), event["name"], event.get("id"))
            if key in begins:
                begin, first = begins.pop(key)
                events.append(Event(first["name"], first.get("cat", ""), pid, None, begin, start,
                                    first.get("args", {})))
        elif phase == "C":
            for name, value in event.get("args", {}).items():
                series = event["name"] if name == "value" else event["name"] + " " + name
                counters[series].append((start, float(value)))
        elif phase == "M":
            args = event.get("args", {})
            if event.get("name") == "process_name":
                processes[pid] = args.get("name", str(pid))
            elif event.get("name") == "process_labels":
                labels[pid] = args.get("labels", "")
            elif event.get("name") == "thread_name":
                threads[(pid, tid)] = args.get("name", str(tid))
    return events, counters, processes, labels, threads


def union(intervals):
    """Merged [start, end) intervals of `intervals`, in order."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def gaps(busy, start, end):
    """The intervals of [start, end) outside `busy` (merged, in order)."""
    found, at = [], start
    for busy_start, busy_end in busy:
        if busy_start > at:
            found.append((at, min(busy_start, end)))
        at = max(at, busy_end)
    if at < end:
        found.append((at, end))
    return [gap for gap in found if gap[1] > gap[0]]


def overlap(event, start, end):
    return max(0.0, min(event.end, end) - max(event.start, start))


def device_of(pid, processes, labels):
    label = labels.get(pid, "")
    if label.startswith("device "):
        return label[len("device "):]
    return label or processes.get(pid, "pid %s" % pid)


def stage_totals(events, wall):
    """{name: (count, seconds, share of wall)} of `events`, largest first."""
    totals = collections.OrderedDict()
    sums = collections.defaultdict(lambda: [0, 0.0])
    for event in events:
        sums[event.name][0] += 1
        sums[event.name][1] += event.seconds
    for name, (count, seconds) in sorted(sums.items(), key=lambda item: -item[1][1]):
        totals[name] = (count, seconds, seconds / wall if wall > 0 else 0.0)
    return totals


def what_ran(gap, events, track_name, limit=4):
    """[(stage, where, seconds)] of `events` that overlap `gap`, longest first."""
    sums = collections.defaultdict(float)
    for event in events:
        if event.category == MODEL:
            continue
        seconds = overlap(event, gap[0], gap[1])
        if seconds > 0:
            sums[(event.name, track_name(event))] += seconds
    ranked = sorted(sums.items(), key=lambda item: -item[1])
    if limit is not None:
        ranked = ranked[:limit]
    return [(name, where, seconds) for (name, where), seconds in ranked]


def what_ran_in_all(idle, events, track_name, limit=6):
    """what_ran() summed over every gap of `idle`."""
    sums = collections.defaultdict(float)
    for gap in idle:
        for stage, where, seconds in what_ran(gap, events, track_name, limit=None):
            sums[(stage, where)] += seconds
    ranked = sorted(sums.items(), key=lambda item: -item[1])[:limit]
    return [{"stage": stage, "where": where, "seconds": seconds}
            for (stage, where), seconds in ranked]


def summarise(events, counters, processes, labels, threads, gap_count):
    """The summary as a dictionary (what --json prints)."""
    def track_name(event):
        if event.tid is None:
            return processes.get(event.pid, "pid %s" % event.pid) + " (queue)"
        return threads.get((event.pid, event.tid), "%s/%s" % (event.pid, event.tid))

    ends = [event.end for event in events]
    wall = max(ends) if ends else 0.0
    engines = sorted({event.pid for event in events if event.category == MODEL} |
                     {pid for pid in processes if pid != 0})
    shared = [event for event in events if event.pid not in engines]
    by_pid = collections.defaultdict(list)
    for event in events:
        by_pid[event.pid].append(event)

    def unit(name, pids):
        mine = [event for pid in pids for event in by_pid[pid]]
        models = [(event.start, event.end) for event in mine if event.category == MODEL]
        busy = union(models)
        busy_seconds = sum(end - start for start, end in busy)
        idle = sorted(gaps(busy, 0.0, wall), key=lambda gap: gap[0] - gap[1])
        return {
            "name": name,
            "engines": [processes.get(pid, "pid %s" % pid) for pid in pids],
            "wall_seconds": wall,
            "model_calls": len(models),
            "busy_seconds": busy_seconds,
            "busy_share": busy_seconds / wall if wall > 0 else 0.0,
            "idle_seconds": wall - busy_seconds,
            "stages": [{"stage": stage, "count": count, "seconds": seconds, "share": share}
                       for stage, (count, seconds, share) in stage_totals(mine, wall).items()],
            "in_all_gaps": what_ran_in_all(idle, mine, track_name),
            "gaps": [{"start": start, "end": end, "seconds": end - start,
                      "here": [{"stage": stage, "where": where, "seconds": seconds}
                               for stage, where, seconds in
                               what_ran((start, end), mine, track_name)],
                      "shared": [{"stage": stage, "where": where, "seconds": seconds}
                                 for stage, where, seconds in
                                 what_ran((start, end), shared, track_name)]}
                     for start, end in idle[:gap_count]],
        }

    devices = collections.OrderedDict()
    for pid in engines:
        devices.setdefault(device_of(pid, processes, labels), []).append(pid)
    waits = [event for event in shared if event.tid is None]
    queues = {}
    for name, series in counters.items():
        series.sort()
        # The time-weighted mean over the run, and the largest value.
        weighted = sum(value * ((series[k + 1][0] if k + 1 < len(series) else wall) - at)
                       for k, (at, value) in enumerate(series))
        queues[name] = {"max": max(value for _, value in series),
                        "mean": weighted / wall if wall > 0 else 0.0}
    return {
        "wall_seconds": wall,
        "devices": [unit(device, pids) for device, pids in devices.items()],
        "engines": [unit(processes.get(pid, "pid %s" % pid), [pid]) for pid in engines],
        "shared": {
            "stages": [{"stage": stage, "count": count, "seconds": seconds, "share": share}
                       for stage, (count, seconds, share) in
                       stage_totals([event for event in shared if event.tid is not None],
                                    wall).items()],
            "waits": [{"stage": stage, "count": count, "seconds": seconds,
                       "longest": max(event.seconds for event in waits if event.name == stage)}
                      for stage, (count, seconds, _) in stage_totals(waits, wall).items()],
        },
        "queues": queues,
    }


def percent(share):
    return "%.1f %%" % (100.0 * share)


def print_unit(unit, title):
    print("== %s: %s" % (title, unit["name"]))
    if len(unit["engines"]) > 1 or title == "device":
        print("   engines: %s" % ", ".join(unit["engines"]))
    print("   wall %.3f s; busy (union of %d model calls) %.3f s = %s; no model call in flight "
          "%.3f s" % (unit["wall_seconds"], unit["model_calls"], unit["busy_seconds"],
                      percent(unit["busy_share"]), unit["idle_seconds"]))
    print("   stages (total, share of wall; inner stages are inside outer ones):")
    width = max([40] + [len(stage["stage"]) for stage in unit["stages"]])
    for stage in unit["stages"]:
        print("     %-*s %6d x %9.3f s %7s" % (width, stage["stage"], stage["count"],
                                                 stage["seconds"], percent(stage["share"])))
    print("   what ran while no model call was in flight (all gaps, this unit's tracks):")
    for item in unit["in_all_gaps"]:
        print("     %-*s %9.3f s  [%s]" % (width, item["stage"], item["seconds"], item["where"]))
    if not unit["in_all_gaps"]:
        print("     nothing traced")
    print("   longest gaps with no model call in flight:")
    if not unit["gaps"]:
        print("     none")
    for gap in unit["gaps"]:
        print("     %.3f s, from %.3f s to %.3f s" % (gap["seconds"], gap["start"], gap["end"]))
        for label, key in (("here", "here"), ("shared", "shared")):
            ran = "; ".join("%s [%s] %.3f s" % (item["stage"], item["where"], item["seconds"])
                            for item in gap[key])
            print("       %-7s %s" % (label + ":", ran or "nothing traced"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="the trace file (parley diarize ... --trace FILE)")
    parser.add_argument("--gaps", type=int, default=5, help="gaps listed per unit (default 5)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    arguments = parser.parse_args()
    try:
        loaded = load(arguments.trace)
    except (OSError, ValueError, KeyError) as error:
        sys.exit("trace_summary: %s: %s" % (arguments.trace, error))
    summary = summarise(*loaded, gap_count=arguments.gaps)
    if arguments.json:
        json.dump(summary, sys.stdout, indent=1)
        print()
        return
    print("run: wall %.3f s, %d device(s), %d engine(s)" % (
        summary["wall_seconds"], len(summary["devices"]), len(summary["engines"])))
    for unit in summary["devices"]:
        print_unit(unit, "device")
    for unit in summary["engines"]:
        print_unit(unit, "engine")
    print("== shared stages (decoding, clustering, writing)")
    for stage in summary["shared"]["stages"]:
        print("     %-40s %6d x %9.3f s %7s" % (stage["stage"], stage["count"], stage["seconds"],
                                                  percent(stage["share"])))
    for wait in summary["shared"]["waits"]:
        print("     %-40s %6d x %9.3f s, longest %.3f s" % (wait["stage"], wait["count"],
                                                            wait["seconds"], wait["longest"]))
    print("== queues (recordings waiting)")
    for name, queue in sorted(summary["queues"].items()):
        print("     %-40s max %4.0f, mean %.2f" % (name, queue["max"], queue["mean"]))


if __name__ == "__main__":
    main()
