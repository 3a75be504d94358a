"""Diarize an archive on a Dask cluster (Debian: python3-distributed), resumably.

    from dask.distributed import Client
    import parley.distributed

    client = Client("tcp://scheduler:8786")
    for report in parley.distributed.iter_archive(client, "files.tsv", "/shared/out", step=2):
        print(report.status, report.path, report.message)

Each worker process loads the models once (a worker plugin holding one corpus engine, laid out
by libparley over the worker's GPUs with ``resources={"GPU": n}``) and takes batches of
recordings. Every result is written as soon as it is done, atomically, as ``parley diarize
--out-dir`` names and writes it: the output under ``out_dir`` and a record beside it. A rerun skips
what a record says was finished with the same settings. See docs/distributed.md.

The plan of the run (each file once, output names, outputs and records, what is finished: the
client's :func:`plan`), settings fingerprints, records and the skip decision are libparley's
(corpus/run_plan.h and run_record.h, through the C API), the same as the CLI's: a CLI run and a
Dask run over one folder skip each other's finished recordings. This module is only the Dask glue
around them: handing out the planned jobs, the worker plugin and the reports.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import queue
import sys
import threading
import time
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

__all__ = ["Report", "diarize_archive", "iter_archive", "plan", "read_manifest", "output_names",
           "without_repeats"]

FORMATS = parley.FORMATS  # every format parley diarize writes, by the same writer
SPEAKER_OPTIONS = ("num_speakers", "min_speakers", "max_speakers")
# How each result is written (the C batch's per-submission settings, not the engine's): the
# option table's Dask options that Python's Pipeline leaves to its results (Diarization.exclusive).
RESULT_OPTIONS = ("exclusive",)
# Options that choose the engine, as parley.Pipeline takes them: the option table's options of
# both Python and parley.distributed (device_id is each worker's GPU; the table's faces_note says
# why an option is not parley.distributed's).
PIPELINE_OPTIONS = tuple(option["name"] for option in parley.options()
                         if option["faces"]["python"] and option["faces"]["dask"]
                         and option["name"] not in SPEAKER_OPTIONS)


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


# ---- Names and the skip decision: libparley's, as parley diarize --manifest --out-dir ----------

def read_manifest(manifest: Union[str, "os.PathLike[str]"]) -> list[str]:
    """The recordings a manifest lists, as ``parley diarize --manifest`` reads it: one path per
    line (or parley eval's TSV: the first field), blank lines and '#' comments skipped, relative
    paths taken from the manifest's folder."""
    return [os.fsdecode(path) for path in
            parley._parley.manifest_paths(os.fsencode(os.fspath(manifest)))]


def plan(paths: Sequence[str], out_dir: Union[str, "os.PathLike[str]", None] = None,
         output_format: str = parley.DEFAULT_FORMAT, **options: Any) -> dict[str, Any]:
    """libparley's plan of a run of ``paths`` into ``out_dir`` with ``options`` (parley.Pipeline's
    arguments, num/min/max_speakers and exclusive), as ``parley diarize --out-dir`` plans its list
    (parley_corpus_plan_json): ``{"recordings": [...], "repeats": [...]}``. Each recording once,
    with its position in ``paths`` ("index"), output "name", "outputs" (each format's "output"
    and "record" paths), whether an earlier run "finished" it with these settings and the
    "audio_seconds" its record says; "repeats" gives the positions ("index", "first") of each file
    left out as listed twice. Without ``out_dir``, the names and repeats only."""
    exclusive = bool(options.pop("exclusive", False))
    settings = parley._settings(**options) if options else parley._parley.Settings()
    # The batch's start value for parley_batch_set_exclusive: a run that wrote exclusive turns
    # is finished only for another one that asks for them (its record says which).
    if exclusive:
        settings.set("exclusive", b"true")
    text = parley._parley.corpus_plan_json(
        settings, [os.fsencode(os.fspath(path)) for path in paths],
        None if out_dir is None else os.fsencode(os.fspath(out_dir)), [output_format])
    return json.loads(text)


def without_repeats(paths: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """``paths`` with each file once (the same absolute path however written), in order of first
    mention, as ``parley diarize`` keeps them; and (repeat, first mention) for each left out."""
    planned = plan(paths)
    return ([paths[recording["index"]] for recording in planned["recordings"]],
            [(paths[repeat["index"]], paths[repeat["first"]]) for repeat in planned["repeats"]])


def output_names(paths: Sequence[str]) -> list[str]:
    """One output name per recording, as the CLI chooses them (corpus/recording_list.h): the file
    name without extension; where names would not tell recordings apart, each of those gets '-'
    and 8 hex digits of its absolute path's sha256, more while that still clashes; a name longer
    than 160 bytes is cut and takes the digits too. Each path must be listed once."""
    return [os.fsdecode(name) for name in
            parley._parley.output_names([os.fsencode(path) for path in paths])]


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

    def run(self, jobs: Sequence[dict[str, Any]], out_dir: str, output_format: str,
            speakers: dict[str, Any], exclusive: bool = False) -> Iterator[tuple[int, Any]]:
        """Diarizes `jobs` into `out_dir` (each output and its record written by the engine);
        yields (position in jobs, the batch's index, Result, error message, or None for one an
        earlier attempt finished) in completion order."""
        answers: queue.Queue = queue.Queue()
        positions = {}
        with self._lock:
            for position, job in enumerate(jobs):
                index = self._batch.submit_to(os.fsencode(job["path"]), os.fsencode(out_dir),
                                              output_format, os.fsencode(job["name"]),
                                              speakers.get("num_speakers"),
                                              speakers.get("min_speakers"),
                                              speakers.get("max_speakers"), exclusive)
                positions[index] = position
                self._waiting[index] = answers
                self.in_flight += 1
                self._owed.release()
        for _ in jobs:
            index, outcome = answers.get()
            yield positions[index], index, outcome

    def skipped_seconds(self, index: int) -> float:
        """The audio seconds of the record of submission `index`, found finished."""
        return self._batch.skipped_seconds(index)

    def layout(self) -> str:
        return self._batch.layout()

    def close(self) -> None:
        self._batch.finish()
        self._owed.release()
        self._collector.join()


class PipelinePlugin(WorkerPlugin):
    """Loads parley's models once per worker process into one corpus engine and keeps it. A
    worker started with ``--resources GPU=n`` spreads it over devices 0..n-1 of those it sees
    (set CUDA_VISIBLE_DEVICES per worker) unless ``devices`` is given; how many engines each
    device gets is libparley's layout (corpus/engine_layout.h, ``engines``), as the CLI's."""

    def __init__(self, options: dict[str, Any], name: str) -> None:
        self.options = {key: options[key] for key in PIPELINE_OPTIONS if key in options}
        self.name = name
        self.batch: Optional[_Engine] = None

    def setup(self, worker: Any) -> None:
        # Dask 2022.8 moved the resources to worker.state (the old name warns FutureWarning).
        state = getattr(worker, "state", worker)
        gpus = int(state.total_resources.get("GPU", 0))
        options = dict(self.options)
        if gpus > 0 and options.get("provider", "auto") != "cpu":
            options.setdefault("devices", ",".join(str(device) for device in range(gpus)))
        self.batch = _Engine(parley._settings(**options))

    def teardown(self, worker: Any) -> None:
        if self.batch is not None:
            self.batch.close()
            self.batch = None

    def layout(self) -> dict[str, Any]:
        """The engine layout libparley chose (parley_batch_layout)."""
        assert self.batch is not None, "the plugin is not set up"
        return json.loads(self.batch.layout())

    def engine(self) -> _Engine:
        assert self.batch is not None, "the plugin is not set up"
        return self.batch


def _worker_engine(plugin_name: str, dask_worker: Any = None) -> dict[str, Any]:
    """On a worker (``client.run``): the layout libparley gave its engine, and the GPUs the
    worker offers as Dask resources."""
    state = getattr(dask_worker, "state", dask_worker)
    return {"layout": dask_worker.plugins[plugin_name].layout(),
            "gpus": int(state.total_resources.get("GPU", 0))}


def _task_resources(workers: Iterable[dict[str, Any]]) -> Optional[dict[str, int]]:
    """The Dask resources each task asks for, from where libparley placed the workers' engines
    (``_worker_engine``): a GPU when a worker offering GPUs runs a network on one, whatever the
    provider's name ("auto" included), else none, so that a CPU engine never waits for a GPU.
    A worker that offers no GPU resource cannot run a task that asks for one, so its engine's
    placement alone asks for none."""
    on_gpu = any(worker["gpus"] > 0 and worker["layout"]["providers"] != "cpu"
                 for worker in workers)
    return {"GPU": 1} if on_gpu else None


def _diarize_batch(plugin_name: str, jobs: list[dict[str, Any]], out_dir: str,
                   output_format: str, speakers: dict[str, Any],
                   exclusive: bool = False) -> list[Report]:
    """A task: diarizes `jobs` on this worker's engine, which writes each result as it is done.
    The client handed out only recordings that were not finished, so one the engine finds
    finished was done by an earlier attempt of this task (before its worker died): done."""
    engine = get_worker().plugins[plugin_name].engine()
    reports: list[Report] = []
    started = time.monotonic()
    for position, index, outcome in engine.run(jobs, out_dir, output_format, speakers,
                                               exclusive):
        job = jobs[position]
        wall = time.monotonic() - started
        if isinstance(outcome, str):
            reports.append(Report(job["path"], job["output"], "failed", outcome, 0.0, wall))
        elif outcome is None:
            reports.append(Report(job["path"], job["output"], "done", "",
                                  engine.skipped_seconds(index)))
        else:
            result = parley.Diarization(outcome)
            reports.append(Report(job["path"], job["output"], "done", "", result.duration, wall,
                                  result.speed_twin, tuple(result.warnings)))
    return reports


# ---- On the client -----------------------------------------------------------------------------

def _batches(jobs: list[dict[str, Any]], batch_size: int) -> list[list[dict[str, Any]]]:
    return [jobs[i:i + batch_size] for i in range(0, len(jobs), batch_size)]


def iter_archive(client: Client, inputs: Union[str, "os.PathLike[str]", Iterable[str]],
                 out_dir: Union[str, "os.PathLike[str]"], output_format: str = parley.DEFAULT_FORMAT,
                 batch_size: Optional[int] = None, **options: Any) -> Iterator[Report]:
    """Diarizes every recording of ``inputs`` (a manifest path, or paths the workers can read)
    into ``out_dir`` on ``client``'s cluster; yields a :class:`Report` per recording as it
    comes. ``options``: parley.Pipeline's arguments, num/min/max_speakers and exclusive (at
    most one speaker at a time in every output). ``batch_size``: recordings per task (default: enough tasks for 4 per worker thread, at most 32 each).

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
    unknown = set(options) - set(PIPELINE_OPTIONS) - set(SPEAKER_OPTIONS) - set(RESULT_OPTIONS)
    if unknown:
        raise parley.Error(f"unknown option(s) {', '.join(sorted(unknown))}; expected some of "
                           f"{', '.join(PIPELINE_OPTIONS + SPEAKER_OPTIONS + RESULT_OPTIONS)}")
    if isinstance(inputs, (str, os.PathLike)):
        paths = read_manifest(inputs)
    else:
        paths = [os.fspath(path) for path in inputs]
    out_dir = os.path.abspath(os.fspath(out_dir))
    engine_options = {key: options[key] for key in PIPELINE_OPTIONS if key in options}
    speakers = {key: options[key] for key in SPEAKER_OPTIONS if options.get(key) is not None}
    # libparley's plan, as the CLI's: each file once, its name, output and record, and what an
    # earlier run finished with these settings. Fails as a whole (models missing here) rather
    # than once per recording.
    exclusive = bool(options.get("exclusive", False))
    planned = plan(paths, out_dir, output_format, **engine_options, **speakers,
                   exclusive=exclusive)

    for repeat in planned["repeats"]:
        path, first = paths[repeat["index"]], paths[repeat["first"]]
        yield Report(path, "", "skipped", f"{path} is listed twice (also as {first}); "
                     "diarizing it once")
    pending = []
    for recording in planned["recordings"]:
        path = paths[recording["index"]]
        output = recording["outputs"][0]["output"]
        if recording["finished"]:
            yield Report(path, output, "skipped", "", recording["audio_seconds"])
        else:
            pending.append({"path": path, "name": recording["name"], "output": output})
    if not pending:
        return

    threads = sum(client.nthreads().values()) or 1
    if batch_size is None:
        batch_size = max(1, min(32, math.ceil(len(pending) / (4 * threads))))
    plugin_name = "parley-" + hashlib.sha256(
        json.dumps(engine_options, sort_keys=True, default=str).encode()).hexdigest()[:16]
    client.register_worker_plugin(PipelinePlugin(engine_options, plugin_name), name=plugin_name)
    # Whether a task needs a GPU is the engines' placement, which libparley decided on each worker
    # as the plugin set it up (provider "auto" on a GPU worker runs there), not the provider's name.
    resources = _task_resources(client.run(_worker_engine, plugin_name).values())

    def submit(batch: list[dict[str, Any]]) -> Any:
        return client.submit(_diarize_batch, plugin_name, batch, out_dir, output_format,
                             speakers, exclusive, pure=False, resources=resources)

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

# argparse's reading of each option type of the table (parley options --json).
_ARGUMENT_TYPES = {"number": float, "integer": int, "text": str, "path": str}
# What a flag means on a cluster, where it differs from the table's help.
_HELP_NOTES = {"threads": " (per worker; default with --local: cores / N, else all)"}


def _add_table_arguments(parser: argparse.ArgumentParser) -> list[str]:
    """The option table's Dask options as arguments, spelled as ``parley diarize`` spells them
    (so a new option of the table is one here too); their names (each argument's dest)."""
    names = []
    for option in parley.options():
        if not option["faces"]["dask"]:
            continue
        name = option["name"]
        flag = option["faces"]["cli"] or "--" + name.replace("_", "-")
        help_text = option["help"] + _HELP_NOTES.get(name, "")
        kind = option["type"]
        # The table's default, but threads: none is cores / N with --local (all cores without).
        default = None if name == "threads" else option["default"]
        if kind == "flag":
            parser.add_argument(flag, dest=name, action="store_true", default=bool(default),
                                help=help_text)
        elif kind == "choice":
            parser.add_argument(flag, dest=name, choices=option["choices"], default=default,
                                help=help_text)
        elif kind == "list":
            parser.add_argument(flag, dest=name, action="append", default=default,
                                help=help_text)
        else:
            parser.add_argument(flag, dest=name, type=_ARGUMENT_TYPES[kind], default=default,
                                help=help_text)
        names.append(name)
    return names


def _parser() -> tuple[argparse.ArgumentParser, list[str]]:
    """``python3 -m parley.distributed``'s arguments, and the names of the table's among them."""
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
    parser.add_argument("--batch-size", type=int, help="recordings per task")
    names = _add_table_arguments(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="print failures only")
    return parser, names


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser, names = _parser()
    arguments = parser.parse_args(argv)

    paths = list(arguments.audio)
    try:
        for manifest in arguments.manifest:
            paths += read_manifest(manifest)
    except (OSError, parley.Error) as error:
        parser.error(str(error))
    if not paths:
        parser.error("name the recordings to diarize, or a --manifest that lists them")
    options = {name: getattr(arguments, name) for name in names
               if getattr(arguments, name) is not None}
    # --provider-option key=value, repeatable as on the command line: parley.Pipeline's dict.
    provider_options = {}
    for item in options.pop("provider_options", None) or []:
        key, equals, value = item.partition("=")
        if not equals or not key:
            parser.error(f"--provider-option {item}: expected key=value")
        provider_options[key] = value
    if provider_options:
        options["provider_options"] = provider_options
    output_format = options.pop("format", parley.DEFAULT_FORMAT)
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
                                       output_format=output_format,
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
