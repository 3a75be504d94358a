#!/usr/bin/env python3
"""Latency and throughput of `parley serve`, against the corpus CLI in the same run (issue #14).

  bench/serve_bench.py --parley build/parley --audio CALL [-n 5] [-m 8] [--provider cuda]
                       [--url http://host:port] [-- FLAGS FOR BOTH serve AND diarize]

Starts `parley serve` on a free loopback port with a temporary state folder (or uses the server
at --url), waits for /v1/health, then measures
  latency     one call submitted to the idle warm server, N times in a row: p50/p95 of
              submit -> result (POST /v1/jobs, poll, GET result);
  throughput  M copies of the call submitted at once: audio hours per wall hour;
  corpus      `parley diarize --manifest LIST --out-dir DIR` on the same M files, same flags.
Prints one JSON object, then a markdown table with the ratios. Python's standard library only.
Flags after `--` (models, --threads, --devices ...) go to both serve and diarize; --provider is
passed to both too."""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def call(url, method="GET", body=None, headers=None, timeout=600):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.status, answer.read()


def multipart(path):
    boundary = uuid.uuid4().hex
    with open(path, "rb") as audio:
        data = audio.read()
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; "
            f"filename=\"{os.path.basename(path)}\"\r\nContent-Type: application/octet-stream"
            f"\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def diarize_over_http(url, path, poll_seconds=0.05):
    """Seconds from submit to result of one job, and the job as it finished."""
    body, headers = multipart(path)
    start = time.perf_counter()
    status, answer = call(f"{url}/v1/jobs", "POST", body, headers)
    if status != 202:
        sys.exit(f"serve_bench: submit answered {status}: {answer[:200]!r}")
    job_id = json.loads(answer)["id"]
    while True:
        job = json.loads(call(f"{url}/v1/jobs/{job_id}")[1])
        if job["state"] == "done":
            break
        if job["state"] in ("failed", "cancelled"):
            sys.exit(f"serve_bench: job {job_id} {job['state']}: {job.get('error')}")
        time.sleep(poll_seconds)
    call(f"{url}/v1/jobs/{job_id}/result")
    return time.perf_counter() - start, job


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


class Server:
    """`parley serve` on a free loopback port with a temporary state folder."""

    def __init__(self, parley, flags, work):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(work, "serve.log"), "w")
        self.process = subprocess.Popen(
            # All the copies come at once from this one address: no connection is turned away.
            [parley, "serve", "--port", str(self.port), "--state-dir",
             os.path.join(work, "state"), "--max-queue", "100000", "--max-connections", "512",
             "--max-client-connections", "512", *flags],
            stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"serve_bench: parley serve exited {self.process.returncode}; see "
                         f"{self.log.name} (--keep keeps it)")
            try:
                return json.loads(call(f"{self.url}/v1/health", timeout=5)[1])
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        sys.exit(f"serve_bench: parley serve not healthy after {timeout} s; see "
                 f"{self.log.name} (--keep keeps it)")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=120)
        self.log.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parley", default="build/parley", help="the parley binary")
    parser.add_argument("--audio", required=True,
                        help="the call (any format parley reads), e.g. 3 minutes")
    parser.add_argument("-n", type=int, default=5, help="sequential calls for the latency")
    parser.add_argument("-m", type=int, default=8, help="calls submitted at once")
    parser.add_argument("--provider", help="passed to serve and diarize (e.g. cuda)")
    parser.add_argument("--url", help="use this running server instead of starting one")
    parser.add_argument("--ready-timeout", type=float, default=600,
                        help="seconds to wait for /v1/health (a GPU server compiles first)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("flags", nargs="*", help="after --: flags for serve and diarize")
    args = parser.parse_args()
    if args.n < 1 or args.m < 1:
        parser.error("-n and -m must be at least 1")
    flags = list(args.flags) + (["--provider", args.provider] if args.provider else [])
    work = tempfile.mkdtemp(prefix="serve-bench-")
    server = None
    try:
        if args.url:
            url = args.url.rstrip("/")
            health = json.loads(call(f"{url}/v1/health")[1])
        else:
            server = Server(args.parley, flags, work)
            health = server.wait_ready(args.ready_timeout)
            url = server.url
        # Warm: the first call pays for lazy initialisation (kernels, arenas).
        seconds = diarize_over_http(url, args.audio)[1]["audio_seconds"]
        latencies = [diarize_over_http(url, args.audio)[0] for _ in range(args.n)]

        # M copies, named apart so that the corpus run writes M outputs.
        copies = []
        extension = os.path.splitext(args.audio)[1]
        for k in range(args.m):
            copy = os.path.join(work, f"call{k:04d}{extension}")
            shutil.copyfile(args.audio, copy)
            copies.append(copy)
        results = [None] * args.m

        def one(k):
            results[k] = diarize_over_http(url, copies[k], poll_seconds=0.2)[0]

        start = time.perf_counter()
        threads = [threading.Thread(target=one, args=(k,)) for k in range(args.m)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        serve_wall = time.perf_counter() - start
        if None in results:
            sys.exit("serve_bench: a concurrent call failed (see above)")
        if server:
            server.stop()
            server = None

        manifest = os.path.join(work, "calls.txt")
        with open(manifest, "w") as listing:
            listing.write("".join(f"{copy}\n" for copy in copies))
        start = time.perf_counter()
        subprocess.run([args.parley, "diarize", "--manifest", manifest, "--out-dir",
                        os.path.join(work, "corpus-out"), "-q", *flags], check=True)
        corpus_wall = time.perf_counter() - start
    finally:
        if server:
            server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    audio_hours = args.m * seconds / 3600
    report = {
        "audio": os.path.basename(args.audio), "audio_seconds": round(seconds, 2),
        "server": {"url": args.url or "started", "engines": health.get("engines"),
                   "providers": health.get("providers"), "devices": health.get("devices")},
        "flags": flags,
        "latency": {"calls": args.n, "p50_s": round(percentile(latencies, 0.5), 3),
                    "p95_s": round(percentile(latencies, 0.95), 3),
                    "mean_s": round(statistics.mean(latencies), 3),
                    "all_s": [round(value, 3) for value in latencies]},
        "throughput": {"calls": args.m, "wall_s": round(serve_wall, 3),
                       "audio_hours_per_hour": round(audio_hours * 3600 / serve_wall, 2)},
        "corpus_cli": {"calls": args.m, "wall_s": round(corpus_wall, 3),
                       "audio_hours_per_hour": round(audio_hours * 3600 / corpus_wall, 2)},
    }
    print(json.dumps(report, indent=2))
    latency, serve, corpus = report["latency"], report["throughput"], report["corpus_cli"]
    print(f"""
| measure | value | ratio |
|---|---|---|
| latency p50 (one {seconds:.0f} s call, idle warm server) | {latency['p50_s']:.2f} s | {seconds / latency['p50_s']:.1f}x real time |
| latency p95 | {latency['p95_s']:.2f} s | {latency['p95_s'] / latency['p50_s']:.2f}x p50 |
| serve, {args.m} calls at once | {serve['wall_s']:.2f} s | {serve['audio_hours_per_hour']:.1f}x real time |
| `diarize --manifest`, same {args.m} calls | {corpus['wall_s']:.2f} s | {corpus['audio_hours_per_hour']:.1f}x real time |
| serve throughput / corpus CLI | | {corpus['wall_s'] / serve['wall_s']:.2f} |""")


if __name__ == "__main__":
    main()
