"""Diarize an archive on a Dask cluster (Debian: python3-distributed), resumably.

    from dask.distributed import Client
    import parley.distributed

    client = Client("tcp://scheduler:8786")
    for report in parley.distributed.iter_archive(client, "files.tsv", "/shared/out", step=2):
        print(report.status, report.path, report.message)

Each worker process loads the models once (a worker plugin holding one corpus engine, or one per
GPU with ``resources={"GPU": n}``) and takes batches of recordings. Every result is written as
soon as it is done, atomically, as ``parley diarize --out-dir`` names and writes it: the RTTM (or
JSON) under ``out_dir`` and a record in ``out_dir/.parley/<name>.<format>.json``. A rerun skips what a
record says was finished with the same settings. See docs/distributed.md.

The settings fingerprint is computed here, from the pipeline options, the models' sha256 and the
audio's path, size and modification time; it is not the CLI's (which covers its own flags), so
a run of one does not skip what the other finished: it redoes it, with the same text.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import queue
import sys
import threading
import time
import uuid
import warnings
from typing import Any, Iterable, Iterator, NamedTuple, Optional, Sequence, Union

import parley

try:
    from distributed import Client, as_completed, get_worker
    from distributed.diagnostics.plugin import WorkerPlugin
    from distributed.scheduler import KilledWorker
except ImportError as error:  # pragma: no cover - depends on the machine
    raise parley.Error(
        f"parley.distributed needs Dask, which {sys.executable} cannot import: pip install "
        "distributed into its environment, or run Debian's /usr/bin/python3 (apt install "
        "python3-distributed) or a virtual environment made from it with "
        "--system-site-packages") from error

__all__ = ["Report", "diarize_archive", "iter_archive", "read_manifest", "output_names",
           "without_repeats"]

FORMATS = ("rttm", "json")
# Options that choose the engine, as parley.Pipeline takes them.
PIPELINE_OPTIONS = ("models_dir", "provider", "provider_options", "step", "embedding_mode",
                    "clustering", "threads")
SPEAKER_OPTIONS = ("num_speakers", "min_speakers", "max_speakers")
MODEL_SUFFIXES = (".onnx", ".npz", ".ort")


class Report(NamedTuple):
    """What became of one recording: ``status`` is "done", "skipped" (finished by an earlier
    run with the same settings) or "failed" (``message`` says why). ``speed_twin``: diarized now
    with the speed twin (random weights) as speaker-embedding model, so its speaker labels are
    meaningless; ``warnings`` says so (as :attr:`parley.Diarization.warnings`)."""

    path: str
    output: str
    status: str
    message: str = ""
    audio_seconds: float = 0.0
    wall_seconds: float = 0.0
    speed_twin: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def speed(self) -> float:
        """Times faster than real time (0 when not diarized now)."""
        return self.audio_seconds / self.wall_seconds if self.wall_seconds > 0 else 0.0


# ---- Names and fingerprints: as parley diarize --manifest --out-dir -----------------------------

def read_manifest(manifest: Union[str, "os.PathLike[str]"]) -> list[str]:
    """The recordings a manifest lists, as ``parley diarize --manifest`` reads it: one path per
    line (first tab-separated field), blank lines and '#' comments skipped, relative paths
    taken from the manifest's folder."""
    manifest = os.fspath(manifest)
    paths = []
    with open(manifest, encoding="utf-8") as stream:
        for line in stream:
            audio = line.rstrip("\n").rstrip("\r").split("\t", 1)[0].strip(" ")
            if not audio or audio.startswith("#"):
                continue
            paths.append(audio if os.path.isabs(audio)
                         else os.path.join(os.path.dirname(manifest), audio))
    if not paths:
        raise parley.Error(f"{manifest}: names no recording")
    return paths


# The longest output name in bytes (cli::kMaxOutputNameBytes): outputs, records and their
# temporary files stay within a file name's 255 bytes.
_MAX_NAME_BYTES = 160


def _recording_uri(path: str) -> bytes:
    # As eval::recording_uri: ASCII white space and control characters become '_'.
    stem = os.fsencode(os.path.splitext(os.path.basename(path))[0])
    return bytes(b"_"[0] if byte <= 0x20 or byte == 0x7F else byte for byte in stem) or b"audio"


def _utf8_length(data: bytes, index: int) -> int:
    for length in range(1, 5):
        piece = data[index:index + length]
        if len(piece) < length:
            return 0
        try:
            if len(piece.decode("utf-8")) == 1:
                return length
        except UnicodeDecodeError:
            continue
    return 0


def _cut_at_utf8_boundary(data: bytes, limit: int) -> bytes:
    if len(data) <= limit:
        return data
    end = index = 0
    while index < limit:
        length = max(1, _utf8_length(data, index))
        if index + length > limit:
            break
        index += length
        end = index
    return data[:end]


def _absolute(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def without_repeats(paths: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """``paths`` with each file once (the same absolute path however written), in order of first
    mention, as ``parley diarize`` keeps them; and (repeat, first mention) for each left out."""
    first: dict[str, str] = {}
    once, repeats = [], []
    for path in paths:
        where = _absolute(path)
        if where in first:
            repeats.append((path, first[where]))
        else:
            first[where] = path
            once.append(path)
    return once, repeats


def output_names(paths: Sequence[str]) -> list[str]:
    """One output name per recording, as the CLI chooses them (cli/recording_list.h): the file
    name without extension; where names would not tell recordings apart, each of those gets '-'
    and 8 hex digits of its absolute path's sha256, more while that still clashes; a name longer
    than 160 bytes is cut and takes the digits too. Each path must be listed once."""
    bases = [_recording_uri(path) for path in paths]
    digests, seen = [], {}
    for path in paths:
        where = _absolute(path)
        if where in seen:
            raise parley.Error(f"{path} is listed twice (also as {seen[where]}); name each "
                               "recording once")
        seen[where] = path
        digests.append(hashlib.sha256(os.fsencode(where)).hexdigest().encode())
    levels = [1 if len(base) > _MAX_NAME_BYTES else 0 for base in bases]

    def name_at(i: int) -> bytes:
        if levels[i] == 0:
            return bases[i]
        digits = 8 * levels[i]
        return (_cut_at_utf8_boundary(bases[i], _MAX_NAME_BYTES - 1 - digits) + b"-" +
                digests[i][:digits])

    while True:
        names = [name_at(i) for i in range(len(paths))]
        users: dict[bytes, list[int]] = {}
        for i, name in enumerate(names):
            users.setdefault(name, []).append(i)
        clashed = False
        for name, indices in users.items():
            if len(indices) < 2:
                continue
            clashed = True
            for i in indices:
                if levels[i] == 8:
                    raise parley.Error(f"{paths[indices[0]]} and {paths[indices[1]]} would both "
                                       f"be written as {os.fsdecode(name)}; rename one of them")
                levels[i] += 1
        if not clashed:
            return [os.fsdecode(name) for name in names]


def _sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _models_dir(models_dir: Optional[str]) -> str:
    if models_dir:
        return os.fspath(models_dir)
    if os.environ.get("PARLEY_MODELS"):
        return os.environ["PARLEY_MODELS"]
    return os.path.join(os.path.expanduser("~"), ".cache", "parley", "models")


def _model_hashes(models_dir: str) -> dict[str, str]:
    # Every model file the engine could pick: a changed or added model changes the fingerprint.
    hashes = {}
    for root, _, files in os.walk(models_dir, followlinks=True):
        for file in sorted(files):
            if file.endswith(MODEL_SUFFIXES):
                path = os.path.join(root, file)
                hashes[os.path.relpath(path, models_dir)] = _sha256_file(path)
    return dict(sorted(hashes.items()))


def run_settings(options: dict[str, Any], output_format: str) -> dict[str, Any]:
    """What a result depends on besides its audio (threads aside: results do not)."""
    settings = {"engine": f"parley.distributed {parley.__version__}", "format": output_format}
    for key in PIPELINE_OPTIONS + SPEAKER_OPTIONS:
        if key not in ("models_dir", "threads"):
            settings[key] = options.get(key)
    settings["models"] = _model_hashes(_models_dir(options.get("models_dir")))
    return settings


def _file_settings(settings: dict[str, Any], path: str) -> dict[str, Any]:
    status = os.stat(path)
    # As the CLI's records: ISO 8601 in UTC to the nanosecond.
    seconds, nanoseconds = divmod(status.st_mtime_ns, 1_000_000_000)
    modified = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return dict(settings, audio=os.path.abspath(path), audio_bytes=status.st_size,
                audio_modified=f"{modified:%Y-%m-%dT%H:%M:%S}.{nanoseconds:09d}Z")


def _fingerprint(file_settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(file_settings, sort_keys=True).encode()).hexdigest()


def _write_atomically(texts: dict[str, str]) -> None:
    """Writes {path: text}: each file is whole or absent for a reader. All are written and
    synced first and then renamed in a row, so that a worker killed meanwhile leaves an output
    without its record (made again by the retry) only in that instant."""
    temporaries = {}
    try:
        for path, text in texts.items():
            # One name per output: a retry after a kill reuses, and so removes, what was left.
            temporary = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.partial")
            with open(temporary, "w", encoding="utf-8") as stream:
                stream.write(text)
                stream.flush()
                os.fsync(stream.fileno())
            temporaries[path] = temporary
        for path, temporary in temporaries.items():
            os.replace(temporary, path)
    except BaseException:
        for temporary in temporaries.values():
            if os.path.exists(temporary):
                os.unlink(temporary)
        raise


def _finished_record(output: str, record_path: str, fingerprint: str) -> Optional[dict]:
    # The CLI's test: the record carries this fingerprint and the output is the one it describes.
    try:
        with open(record_path, encoding="utf-8") as stream:
            record = json.load(stream)
        if (record.get("fingerprint") == fingerprint and
                record.get("output_sha256") == _sha256_file(output)):
            return record
    except (OSError, ValueError):
        pass  # absent or unreadable: made again
    return None


# ---- On the workers --------------------------------------------------------------------------

class _Engine:
    """One corpus engine (parley's batch API) fed by any number of task threads: submissions are
    serialized, and one collector thread hands each result to the task that asked for it."""

    def __init__(self, settings: "parley._parley.Settings") -> None:
        self._batch = parley._parley.Batch(settings)
        self._lock = threading.Lock()
        self._waiting: dict[int, queue.Queue] = {}
        self.in_flight = 0
        # One release per submission, and one at close: the collector asks the batch for a
        # result only when one is owed (it refuses to wait for submissions that may never come).
        self._owed = threading.Semaphore(0)
        self._collector = threading.Thread(target=self._collect, daemon=True,
                                           name="parley-collector")
        self._collector.start()

    def _collect(self) -> None:
        while self._owed.acquire() and (item := self._batch.next()) is not None:
            index, outcome = item
            with self._lock:
                answer = self._waiting.pop(index)
                self.in_flight -= 1
            answer.put((index, outcome))

    def run(self, paths: Sequence[str], speakers: dict[str, Any]) -> Iterator[tuple[int, Any]]:
        """Yields (position in paths, Result or error message) in completion order."""
        answers: queue.Queue = queue.Queue()
        positions = {}
        with self._lock:
            for position, path in enumerate(paths):
                index = self._batch.submit_file(os.fsencode(path), speakers.get("num_speakers"),
                                                speakers.get("min_speakers"),
                                                speakers.get("max_speakers"))
                positions[index] = position
                self._waiting[index] = answers
                self.in_flight += 1
                self._owed.release()
        for _ in paths:
            index, outcome = answers.get()
            yield positions[index], outcome

    def close(self) -> None:
        self._batch.finish()
        self._owed.release()
        self._collector.join()


class PipelinePlugin(WorkerPlugin):
    """Loads parley's models once per worker process and keeps them: one corpus engine, or one
    per GPU when the worker was started with ``--resources GPU=n`` (devices 0..n-1 of those the
    worker sees, so set CUDA_VISIBLE_DEVICES per worker)."""

    def __init__(self, options: dict[str, Any], name: str) -> None:
        self.options = {key: options[key] for key in PIPELINE_OPTIONS if key in options}
        self.name = name
        self.engines: list[_Engine] = []

    def setup(self, worker: Any) -> None:
        # Dask 2022.8 moved the resources to worker.state (the old name warns FutureWarning).
        state = getattr(worker, "state", worker)
        gpus = int(state.total_resources.get("GPU", 0))
        devices = range(gpus) if gpus > 0 else [-1]
        self.engines = [_Engine(parley._settings(**self.options, device_id=device))
                        for device in devices]

    def teardown(self, worker: Any) -> None:
        for engine in self.engines:
            engine.close()
        self.engines = []

    def engine(self) -> _Engine:
        return min(self.engines, key=lambda engine: engine.in_flight)


def _diarize_batch(plugin_name: str, jobs: list[dict[str, Any]], out_dir: str,
                   output_format: str, speakers: dict[str, Any], run_id: str) -> list[Report]:
    """A task: diarizes `jobs` on this worker's engine, writing each result as it is done."""
    records_dir = os.path.join(out_dir, ".parley")
    reports: list[Report] = []
    remaining = []
    for job in jobs:
        # Work an earlier attempt of this task finished (before its worker died) is not redone.
        record = _finished_record(job["output"], job["record"], job["fingerprint"])
        if record is None:
            remaining.append(job)
        else:
            again = record.get("run") != run_id
            reports.append(Report(job["path"], job["output"], "skipped" if again else "done",
                                  "", record.get("audio_seconds", 0.0),
                                  0.0 if again else record.get("wall_seconds", 0.0)))
    if not remaining:
        return reports
    engine = get_worker().plugins[plugin_name].engine()
    started = time.monotonic()
    for position, outcome in engine.run([job["path"] for job in remaining], speakers):
        job = remaining[position]
        wall = time.monotonic() - started
        if isinstance(outcome, str):
            reports.append(Report(job["path"], job["output"], "failed", outcome, 0.0, wall))
            continue
        result = parley.Diarization(outcome)
        text = result.to_rttm(job["name"]) if output_format == "rttm" else result.to_json()
        record = {"audio": os.path.abspath(job["path"]),
                  "output": os.path.basename(job["output"]),
                  "output_sha256": hashlib.sha256(text.encode()).hexdigest(),
                  "fingerprint": job["fingerprint"], "audio_seconds": result.duration,
                  "speakers": len(result.speakers), "turns": len(result.turns),
                  "wall_seconds": wall, "stage_seconds": result.stage_times,
                  "settings": job["settings"], "run": run_id}
        os.makedirs(records_dir, exist_ok=True)
        _write_atomically({job["output"]: text,
                           job["record"]: json.dumps(record, indent=2) + "\n"})
        reports.append(Report(job["path"], job["output"], "done", "", result.duration, wall,
                              result.speed_twin, tuple(result.warnings)))
    return reports


# ---- On the client -----------------------------------------------------------------------------

def _batches(jobs: list[dict[str, Any]], batch_size: int) -> list[list[dict[str, Any]]]:
    return [jobs[i:i + batch_size] for i in range(0, len(jobs), batch_size)]


def iter_archive(client: Client, inputs: Union[str, "os.PathLike[str]", Iterable[str]],
                 out_dir: Union[str, "os.PathLike[str]"], output_format: str = "rttm",
                 batch_size: Optional[int] = None, **options: Any) -> Iterator[Report]:
    """Diarizes every recording of ``inputs`` (a manifest path, or paths the workers can read)
    into ``out_dir`` on ``client``'s cluster; yields a :class:`Report` per recording as it
    comes. ``options``: parley.Pipeline's arguments and num/min/max_speakers. ``batch_size``:
    recordings per task (default: enough tasks for 4 per worker thread, at most 32 each).

    When the workers' speaker-embedding model is the speed twin (random weights), this warns
    once (:class:`parley.SpeedTwinWarning`) and those reports say so (``Report.speed_twin``)."""
    warned = False
    for report in _iter_archive(client, inputs, out_dir, output_format, batch_size, **options):
        if report.speed_twin and not warned:
            # Once per call, as parley.Pipeline warns once, though every worker loads the model.
            warned = True
            for message in report.warnings:
                warnings.warn(message, parley.SpeedTwinWarning, stacklevel=2)
        yield report


def _iter_archive(client: Client, inputs: Union[str, "os.PathLike[str]", Iterable[str]],
                  out_dir: Union[str, "os.PathLike[str]"], output_format: str,
                  batch_size: Optional[int], **options: Any) -> Iterator[Report]:
    if output_format not in FORMATS:
        raise parley.Error(f"output_format must be one of {', '.join(FORMATS)} "
                           f"(got {output_format!r})")
    unknown = set(options) - set(PIPELINE_OPTIONS) - set(SPEAKER_OPTIONS)
    if unknown:
        raise parley.Error(f"unknown option(s) {', '.join(sorted(unknown))}; expected some of "
                           f"{', '.join(PIPELINE_OPTIONS + SPEAKER_OPTIONS)}")
    if isinstance(inputs, (str, os.PathLike)):
        paths = read_manifest(inputs)
    else:
        paths = [os.fspath(path) for path in inputs]
    # A file listed twice is diarized once, as by the CLI.
    paths, repeats = without_repeats(paths)
    out_dir = os.path.abspath(os.fspath(out_dir))
    os.makedirs(os.path.join(out_dir, ".parley"), exist_ok=True)
    settings = run_settings(options, output_format)
    speakers = {key: options[key] for key in SPEAKER_OPTIONS if options.get(key) is not None}

    for repeat, first in repeats:
        yield Report(repeat, "", "skipped", f"{repeat} is listed twice (also as {first}); "
                     "diarizing it once")
    jobs = []
    for path, name in zip(paths, output_names(paths)):
        output = os.path.join(out_dir, f"{name}.{output_format}")
        try:
            file_settings = _file_settings(settings, path)
        except OSError as error:
            yield Report(path, output, "failed", f"{path}: {error.strerror}")
            continue
        jobs.append({"path": path, "name": name, "output": output,
                     "record": os.path.join(out_dir, ".parley", f"{name}.{output_format}.json"),
                     "settings": file_settings, "fingerprint": _fingerprint(file_settings)})
    pending = []
    for job in jobs:
        record = _finished_record(job["output"], job["record"], job["fingerprint"])
        if record is None:
            pending.append(job)
        else:
            yield Report(job["path"], job["output"], "skipped", "",
                         record.get("audio_seconds", 0.0))
    if not pending:
        return

    threads = sum(client.nthreads().values()) or 1
    if batch_size is None:
        batch_size = max(1, min(32, math.ceil(len(pending) / (4 * threads))))
    engine_options = {key: options[key] for key in PIPELINE_OPTIONS if key in options}
    plugin_name = "parley-" + hashlib.sha256(
        json.dumps(engine_options, sort_keys=True, default=str).encode()).hexdigest()[:16]
    client.register_worker_plugin(PipelinePlugin(engine_options, plugin_name), name=plugin_name)
    run_id = uuid.uuid4().hex
    resources = {"GPU": 1} if options.get("provider", "auto") not in ("auto", "cpu") else None

    def submit(batch: list[dict[str, Any]]) -> Any:
        return client.submit(_diarize_batch, plugin_name, batch, out_dir, output_format,
                             speakers, run_id, pure=False, resources=resources)

    batches = {}
    for batch in _batches(pending, batch_size):
        batches[submit(batch)] = batch
    completed = as_completed(list(batches))
    for future in completed:
        batch = batches.pop(future)
        try:
            yield from future.result()
        except KilledWorker as error:
            if len(batch) > 1:
                # Isolate the recording that kills workers: its neighbours go one per task.
                for job in batch:
                    single = submit([job])
                    batches[single] = [job]
                    completed.add(single)
            else:
                yield Report(batch[0]["path"], batch[0]["output"], "failed",
                             f"{batch[0]['path']}: the worker diarizing it died repeatedly "
                             f"({error}); it may crash parley: report it with the file")
        except Exception as error:  # the task failed as a whole (e.g. models unusable)
            for job in batch:
                yield Report(job["path"], job["output"], "failed", f"{job['path']}: {error}")
        finally:
            future.release()


def diarize_archive(client: Client, inputs: Union[str, "os.PathLike[str]", Iterable[str]],
                    out_dir: Union[str, "os.PathLike[str]"], **options: Any) -> list[Report]:
    """:func:`iter_archive`, run to the end: every recording's report."""
    return list(iter_archive(client, inputs, out_dir, **options))


# ---- python3 -m parley.distributed -----------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m parley.distributed",
        description="Diarize many recordings on a Dask cluster into --out-dir; a rerun skips "
                    "what was finished with the same settings.")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--scheduler", help="address of a running Dask scheduler, "
                       "e.g. tcp://host:8786")
    where.add_argument("--local", type=int, metavar="N",
                       help="start a cluster of N worker processes on this machine")
    parser.add_argument("--manifest", action="append", default=[],
                        help="file listing recordings, one path per line; may be repeated")
    parser.add_argument("audio", nargs="*", help="recordings (besides the manifests')")
    parser.add_argument("--out-dir", required=True, help="folder for results and records")
    parser.add_argument("--format", default="rttm", choices=FORMATS)
    parser.add_argument("--batch-size", type=int, help="recordings per task")
    parser.add_argument("--models", dest="models_dir", help="models folder")
    parser.add_argument("--provider", default="auto")
    parser.add_argument("--step", type=float, default=1.0)
    parser.add_argument("--embedding-mode", default="shared", choices=("shared", "exact"))
    parser.add_argument("--clustering", default="vbx", choices=("vbx", "ahc"))
    parser.add_argument("--threads", type=int,
                        help="CPU threads per worker (default: cores / N with --local, else all)")
    parser.add_argument("--num-speakers", type=int)
    parser.add_argument("--min-speakers", type=int)
    parser.add_argument("--max-speakers", type=int)
    parser.add_argument("-q", "--quiet", action="store_true", help="print failures only")
    arguments = parser.parse_args(argv)

    paths = list(arguments.audio)
    try:
        for manifest in arguments.manifest:
            paths += read_manifest(manifest)
    except (OSError, parley.Error) as error:
        parser.error(str(error))
    if not paths:
        parser.error("name the recordings to diarize, or a --manifest that lists them")
    options = {key: getattr(arguments, key) for key in
               ("models_dir", "provider", "step", "embedding_mode", "clustering", "threads")
               + SPEAKER_OPTIONS if getattr(arguments, key) is not None}
    if arguments.local is not None:
        import dask
        from distributed import LocalCluster

        # A recording that kills its worker twice is given up (reported failed), not retried.
        dask.config.set({"distributed.scheduler.allowed-failures": 1})
        options.setdefault("threads", max(1, (os.cpu_count() or 1) // arguments.local))
        cluster = LocalCluster(n_workers=arguments.local, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        cluster = None
        client = Client(arguments.scheduler)

    counts = {"done": 0, "skipped": 0, "failed": 0}
    audio_seconds = 0.0
    warned = False
    start = time.monotonic()
    try:
        with warnings.catch_warnings():
            # Printed here as the CLI prints it (framed, even with --quiet), not as a Python
            # warning.
            warnings.simplefilter("ignore", parley.SpeedTwinWarning)
            for report in iter_archive(client, paths, arguments.out_dir,
                                       output_format=arguments.format,
                                       batch_size=arguments.batch_size, **options):
                if report.speed_twin and not warned:
                    warned = True
                    rule = "!" * 78
                    for message in report.warnings:
                        print(f"{rule}\n{message}\n{rule}", file=sys.stderr, flush=True)
                counts[report.status] += 1
                if report.status == "done":
                    audio_seconds += report.audio_seconds
                if report.status == "failed":
                    print(f"parley: {report.message}", file=sys.stderr)
                elif not arguments.quiet:
                    print(f"{report.status} {report.output} ({report.audio_seconds:.1f} s of "
                          "audio" + (f", {report.speed:.0f}x)" if report.speed else ")"),
                          file=sys.stderr)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    elapsed = time.monotonic() - start
    if counts["done"] == 0:
        # No speed to report: nothing ran through the models (as parley diarize says it).
        print(f"nothing diarized: {counts['skipped']} of {len(paths)} recordings done earlier, "
              f"{counts['failed']} failed ({elapsed:.1f} s)", file=sys.stderr)
    else:
        print(f"{counts['done']} of {len(paths)} recordings diarized ({counts['skipped']} done "
              f"earlier, {counts['failed']} failed): {audio_seconds / 3600:.2f} h of audio in "
              f"{elapsed:.1f} s ({audio_seconds / elapsed if elapsed else 0:.1f}x real time)",
              file=sys.stderr)
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    # Run from the importable module, so that the plugin and tasks pickle as parley.distributed's.
    from parley.distributed import main as importable_main

    sys.exit(importable_main())
