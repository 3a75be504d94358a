"""parley.distributed on a LocalCluster of 2 worker processes, on 30 s recordings of
../shared/eval copied under 20 names; run by run_pytest.sh like the bindings' suite."""
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import warnings

import pytest

distributed = pytest.importorskip("distributed")
import dask  # noqa: E402

import parley  # noqa: E402
import parley.distributed as pd  # noqa: E402

MODELS = os.environ.get("PARLEY_TEST_MODELS", "")
EVAL = os.environ.get("PARLEY_TEST_EVAL", "")
CLI = os.environ.get("PARLEY_TEST_CLI", "")
OPTIONS = dict(models_dir=MODELS, step=2, threads=1)
COUNT = 20

if not (os.path.isdir(MODELS) and os.path.isdir(os.path.join(EVAL, "ami-debug"))):
    pytest.fail("set PARLEY_TEST_MODELS and PARLEY_TEST_EVAL (run through run_pytest.sh)",
                pytrace=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    sources = sorted(os.path.join(EVAL, "ami-debug", name)
                     for name in os.listdir(os.path.join(EVAL, "ami-debug"))
                     if name.endswith(".wav"))
    folder = tmp_path_factory.mktemp("corpus")
    paths = []
    for i in range(COUNT):
        # Two folders, so that equal base names get the CLI's disambiguated names too.
        path = folder / ("a" if i % 2 else "b") / f"rec{i // 2:02d}.wav"
        path.parent.mkdir(exist_ok=True)
        shutil.copyfile(sources[i % len(sources)], path)
        paths.append(str(path))
    manifest = folder / "files.tsv"
    manifest.write_text("".join(f"{path}\t\n" for path in paths))
    return str(manifest), paths


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """What the CLI writes for the same list (the single-process Python result without it)."""
    manifest, paths = corpus
    out = tmp_path_factory.mktemp("reference")
    if CLI:
        subprocess.run([CLI, "diarize", "--quiet", "--models", MODELS, "--step", "2",
                        "--manifest", manifest, "--out-dir", str(out)], check=True)
    else:
        pipeline = parley.Pipeline(**OPTIONS)
        for path, name in zip(paths, pd.output_names(paths)):
            (out / f"{name}.rttm").write_text(pipeline(path).to_rttm(name))
    texts = {name: (out / name).read_text() for name in os.listdir(out) if name.endswith(".rttm")}
    assert len(texts) == COUNT
    return texts


@pytest.fixture(scope="module")
def client():
    # As --local does: a recording that kills its worker twice is reported failed.
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            with distributed.Client(cluster) as client:
                yield client


def outputs(folder):
    return {name: open(os.path.join(folder, name)).read()
            for name in os.listdir(folder) if name.endswith(".rttm")}


@pytest.fixture(scope="module")
def first_run(client, corpus, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("archive"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reports = pd.diarize_archive(client, corpus[0], out, batch_size=3, **OPTIONS)
    return out, reports, caught


def test_outputs_equal_the_command_line(first_run, reference):
    out, reports, _ = first_run
    assert sorted(report.status for report in reports) == ["done"] * COUNT
    assert all(report.audio_seconds > 25 and report.speed > 0 for report in reports)
    assert outputs(out) == reference
    assert len(os.listdir(os.path.join(out, ".parley"))) == COUNT


def test_speed_twin_is_reported_and_warned_once(first_run):
    """with_test_models.sh gives the speed twin as speaker-embedding model: every report says
    so, and the run warns once, not once per worker, task or recording."""
    _, reports, caught = first_run
    assert all(report.speed_twin for report in reports)
    assert all(any("speed twin" in message for message in report.warnings)
               for report in reports)
    twins = [warning for warning in caught
             if issubclass(warning.category, parley.SpeedTwinWarning)]
    assert len(twins) == 1
    assert "speaker labels are meaningless" in str(twins[0].message)


def test_command_line_warns_and_says_when_nothing_was_diarized(client, corpus, tmp_path,
                                                                 capsys):
    arguments = ["--scheduler", client.scheduler.address, "--models", MODELS, "--step", "2",
                 "--threads", "1", "--out-dir", str(tmp_path)] + corpus[1][:3]
    assert pd.main(arguments) == 0
    printed = capsys.readouterr().err
    assert printed.count("is a speed twin with random weights") == 1
    assert "3 of 3 recordings diarized (0 done earlier, 0 failed)" in printed
    # A rerun diarizes nothing: no speed to report, and no model ran to warn about.
    assert pd.main(arguments) == 0
    printed = capsys.readouterr().err
    assert "nothing diarized: 3 of 3 recordings done earlier, 0 failed (" in printed
    assert "recordings diarized" not in printed and "real time" not in printed
    assert "speed twin" not in printed


def test_rerun_skips_everything(client, corpus, first_run):
    out = first_run[0]
    before = {name: os.stat(os.path.join(out, name)).st_mtime_ns for name in os.listdir(out)}
    reports = pd.diarize_archive(client, corpus[0], out, **OPTIONS)
    assert [report.status for report in reports] == ["skipped"] * COUNT
    assert {name: os.stat(os.path.join(out, name)).st_mtime_ns for name in os.listdir(out)} == before


def test_changed_setting_redoes(client, corpus, first_run):
    out = first_run[0]
    some = corpus[1][:4]
    reports = pd.diarize_archive(client, some, out, **dict(OPTIONS, num_speakers=2))
    assert [report.status for report in reports] == ["done"] * 4
    # Back to the first settings: those four are redone, the others skipped.
    reports = pd.diarize_archive(client, corpus[0], out, **OPTIONS)
    assert sorted(report.status for report in reports) == ["done"] * 4 + ["skipped"] * 16


@pytest.mark.skipif(not CLI, reason="the CLI is not built (PARLEY_TEST_CLI)")
def test_command_line_and_dask_skip_each_others_work(client, corpus, tmp_path):
    """One implementation of names, fingerprints and records (corpus/run_record.h): a CLI run
    and a Dask run over one folder skip what the other finished, in either order, whatever
    their thread counts."""
    some = corpus[1][:4]  # a/ and b/ hold equal names: disambiguated names too
    command = [CLI, "diarize", "--models", MODELS, "--step", "2", "--threads", "2"]

    def mtimes(folder):
        return {name: os.stat(os.path.join(folder, name)).st_mtime_ns
                for name in os.listdir(folder)}

    dask_first = tmp_path / "dask-first"
    reports = pd.diarize_archive(client, some, dask_first, **OPTIONS)
    assert [report.status for report in reports] == ["done"] * 4
    before = mtimes(dask_first)
    run = subprocess.run(command + ["--out-dir", str(dask_first)] + some, capture_output=True,
                         text=True, check=True)
    assert "nothing diarized: 4 of 4 recordings done earlier, 0 failed" in run.stderr
    assert mtimes(dask_first) == before

    cli_first = tmp_path / "cli-first"
    subprocess.run(command + ["--quiet", "--out-dir", str(cli_first)] + some, check=True)
    before = mtimes(cli_first)
    reports = pd.diarize_archive(client, some, cli_first, **OPTIONS)
    assert [report.status for report in reports] == ["skipped"] * 4
    assert mtimes(cli_first) == before
    assert outputs(cli_first) == outputs(dask_first)


def _overlapping(rttm):
    """Whether two turns of one recording's RTTM overlap in time."""
    turns = sorted((float(line.split()[3]), float(line.split()[3]) + float(line.split()[4]))
                   for line in rttm.splitlines() if line.strip())
    return any(start < end - 1e-9 for (_, end), (start, _) in zip(turns, turns[1:]))


def test_exclusive_writes_turns_that_do_not_overlap(client, corpus, first_run, tmp_path):
    """exclusive=True (``--exclusive``) writes at most one speaker at a time, as ``parley diarize
    --exclusive`` does; the records tell the two apart, so neither run skips the other's work."""
    some = corpus[1][:4]
    exclusive = tmp_path / "exclusive"
    reports = pd.diarize_archive(client, some, exclusive, exclusive=True, **OPTIONS)
    assert [report.status for report in reports] == ["done"] * 4
    written = outputs(exclusive)
    assert len(written) == 4 and any(written.values())
    assert not any(_overlapping(text) for text in written.values())
    # The same recordings without it overlap (so the test above can fail).
    plain = {name: text for name, text in outputs(first_run[0]).items() if name in written}
    assert len(plain) == 4 and any(_overlapping(text) for text in plain.values())
    # Finished for exclusive runs only.
    assert all(recording["finished"] for recording in
               pd.plan(some, exclusive, "rttm", exclusive=True, **OPTIONS)["recordings"])
    assert not any(recording["finished"] for recording in
                   pd.plan(some, exclusive, "rttm", **OPTIONS)["recordings"])
    if CLI:
        cli = tmp_path / "cli"
        subprocess.run([CLI, "diarize", "--quiet", "--models", MODELS, "--step", "2",
                        "--exclusive", "--out-dir", str(cli)] + some, check=True)
        assert outputs(cli) == written


def test_corrupt_recording_fails_alone(client, corpus, tmp_path):
    corrupt = tmp_path / "corrupt.wav"
    corrupt.write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunkjunkjunk" * 10)
    paths = [corpus[1][0], str(corrupt), corpus[1][1]]
    reports = {report.path: report for report in
               pd.diarize_archive(client, paths, tmp_path / "out", batch_size=3, **OPTIONS)}
    assert reports[str(corrupt)].status == "failed"
    assert "corrupt.wav" in reports[str(corrupt)].message
    assert reports[corpus[1][0]].status == reports[corpus[1][1]].status == "done"


def test_worker_killed_mid_run(client, corpus, reference, tmp_path):
    out = str(tmp_path)
    seen = {}  # output name -> every (inode, mtime) it was seen with while the run went on
    stop = threading.Event()

    def look():
        for name in os.listdir(out):
            if name.endswith(".rttm"):
                status = os.stat(os.path.join(out, name))
                seen.setdefault(name, set()).add((status.st_ino, status.st_mtime_ns))

    def watch():
        while not stop.is_set():
            look()
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    reports = []
    try:
        for report in pd.iter_archive(client, corpus[0], out, batch_size=2, **OPTIONS):
            if not reports:
                pids = client.run(os.getpid)
                os.kill(sorted(pids.values())[0], signal.SIGKILL)
            reports.append(report)
    finally:
        stop.set()
        watcher.join()
    look()  # what was written after the watcher's last look
    assert sorted(report.path for report in reports) == sorted(corpus[1])
    assert [report.status for report in reports] == ["done"] * COUNT
    assert outputs(out) == reference
    assert {name: len(versions) for name, versions in seen.items()} == {
        name: 1 for name in reference}
    leftovers = [name for folder in (out, os.path.join(out, ".parley"))
                 for name in os.listdir(folder) if ".partial" in name]
    assert not leftovers  # no temporary file of a write left behind


def test_worker_setup_reads_resources_without_a_future_warning():
    """Dask moved Worker.total_resources to Worker.state (the old name warns FutureWarning at
    every worker start)."""
    import warnings

    class State:
        total_resources: dict = {}

    class Worker:
        state = State()

        @property
        def total_resources(self):
            warnings.warn("Worker.total_resources moved", FutureWarning)
            return {}

    plugin = pd.PipelinePlugin(OPTIONS, "parley-test")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plugin.setup(Worker())
    # One corpus engine, laid out by libparley as a batch of the same options is.
    assert plugin.layout() == json.loads(parley._parley.Batch(parley._settings(**OPTIONS)).layout())
    plugin.teardown(Worker())


def test_a_worker_with_gpus_lays_one_engine_out_over_them(monkeypatch):
    """``--resources GPU=n``: one corpus engine over devices 0..n-1, engines per device left to
    libparley's layout (corpus/engine_layout.h), not one engine per GPU made here."""
    made = []

    class Engine:
        def __init__(self, settings):
            made.append(json.loads(settings.values_json()))

        def close(self):
            pass

    class State:
        total_resources = {"GPU": 2}

    class Worker:
        state = State()

    monkeypatch.setattr(pd, "_Engine", Engine)
    for options, devices in ((dict(OPTIONS, provider="cuda"), "0,1"),
                             (dict(OPTIONS, provider="cuda", devices="1"), "1"),
                             (dict(OPTIONS, provider="cpu"), None)):
        plugin = pd.PipelinePlugin(options, "parley-test")
        plugin.setup(Worker())
        plugin.teardown(Worker())
        assert len(made) == 1 and made.pop().get("devices") == devices, options


def test_tasks_ask_for_a_gpu_only_where_libparley_placed_the_engine_on_one(client):
    """Whether tasks ask for a GPU resource follows where libparley placed each worker's engine
    (its layout), not the provider's name: with provider "auto" on these CPU-only workers the
    layout is the CPU's, so no task asks for a GPU (and none waits for one), even where a worker
    offers GPU resources."""
    name = "parley-test-resources"
    client.register_worker_plugin(pd.PipelinePlugin(dict(OPTIONS, provider="auto"), name),
                                  name=name)
    workers = list(client.run(pd._worker_engine, name).values())
    batch = parley._parley.Batch(parley._settings(**OPTIONS, provider="auto"))
    try:
        here = json.loads(batch.layout())
    finally:
        batch.finish()
    assert len(workers) == 2 and all(worker["layout"] == here for worker in workers)
    if here["providers"] != "cpu":
        pytest.skip("libparley places provider auto on a GPU on this machine")
    assert all(worker["gpus"] == 0 for worker in workers)
    assert pd._task_resources(workers) is None
    assert pd._task_resources([dict(worker, gpus=1) for worker in workers]) is None


def test_provider_auto_on_a_gpu_asks_for_the_gpu():
    """Where libparley places provider "auto" on a GPU, a worker offering GPUs makes every task
    ask for one (as a named GPU provider does); a worker offering none asks for nothing, which
    it could never give. Runs only on a machine with a GPU: libparley's layout planner has no
    way to place an engine on a GPU it cannot see."""
    batch = parley._parley.Batch(parley._settings(**OPTIONS, provider="auto"))
    try:
        layout = json.loads(batch.layout())
    finally:
        batch.finish()
    if layout["providers"] == "cpu":
        pytest.skip("libparley places provider auto on the CPU here (no GPU)")
    assert pd._task_resources([{"layout": layout, "gpus": 1}]) == {"GPU": 1}
    assert pd._task_resources([{"layout": layout, "gpus": 0}]) is None


def test_the_client_hands_out_libparleys_plan(client, corpus, tmp_path):
    """distributed.py builds no output or record path and reads no record: what it reports and
    hands out is libparley's plan (parley_corpus_plan_json), the CLI's, for a list with repeats
    and names that clash."""
    source = open(pd.__file__, encoding="utf-8").read()
    for building in ('".parley"', "os.path.join(out_dir", "open(job", "audio_seconds\", 0"):
        assert building not in source, building
    first = corpus[1][0]
    paths = corpus[1][:4] + [os.path.join(os.path.dirname(first), ".", os.path.basename(first))]
    out = tmp_path / "out"
    planned = pd.plan(paths, out, "rttm", **OPTIONS)
    settings = parley._settings(**OPTIONS)
    assert planned == json.loads(parley._parley.corpus_plan_json(
        settings, [os.fsencode(path) for path in paths], os.fsencode(str(out)), ["rttm"]))
    assert planned["repeats"] == [{"index": 4, "first": 0}]
    names = [recording["name"] for recording in planned["recordings"]]
    assert names == pd.output_names(paths[:4])
    assert len(set(names)) == 4 and all(name.startswith("rec0") and "-" in name for name in names)
    assert pd.without_repeats(paths) == (paths[:4], [(paths[4], paths[0])])

    reports = pd.diarize_archive(client, paths, out, **OPTIONS)
    by_status = sorted((report.status, report.output) for report in reports)
    expected = sorted([("done", recording["outputs"][0]["output"])
                       for recording in planned["recordings"]] + [("skipped", "")])
    assert by_status == expected
    # Finished now, with the seconds of audio each record holds: a rerun reports those.
    again = pd.plan(paths, out, "rttm", **OPTIONS)
    assert all(recording["finished"] and recording["audio_seconds"] > 25
               for recording in again["recordings"])
    rerun = {report.output: report for report in pd.diarize_archive(client, paths, out, **OPTIONS)
             if report.output}
    for recording in again["recordings"]:
        report = rerun[recording["outputs"][0]["output"]]
        assert report.status == "skipped" and report.audio_seconds == recording["audio_seconds"]


class _Parsed(Exception):
    pass


def test_arguments_follow_the_option_table(monkeypatch):
    """Every option the table gives parley.distributed is one of its arguments, with the
    table's default and choices."""
    import argparse

    captured = {}

    def capture(self, args=None, namespace=None):
        captured["parser"] = self
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(_Parsed):
        pd.main([])
    actions = {action.dest: action for action in captured["parser"]._actions}
    dask_options = [option for option in parley.options() if option["faces"]["dask"]]
    assert dask_options
    for option in dask_options:
        name = option["name"]
        assert name in actions, f"parley.distributed lacks --{name.replace('_', '-')}"
        action = actions[name]
        expected = option["default"]
        # --threads: none means cores / N with --local, all cores otherwise (the table's 0).
        if name == "threads" and action.default is None:
            expected = None
        assert action.default == expected, f"{name}: {action.default!r} != {expected!r}"
        if option["choices"]:
            assert list(action.choices) == option["choices"], name
    # An option the table does not give parley.distributed (the transcript's, the speaker
    # library's, ...) is no argument of it, and the table says why.
    for option in parley.options():
        if not option["faces"]["dask"]:
            assert option["name"] not in actions, f"parley.distributed takes --{option['name']}"
            assert option["faces_note"], option["name"]



def test_a_provider_option_is_key_equals_value(tmp_path, capsys):
    """--provider-option is repeatable key=value, as on the command line; anything else is a
    usage error before any cluster starts."""
    with pytest.raises(SystemExit) as exited:
        pd.main(["--local", "1", "--out-dir", str(tmp_path), "x.wav", "--provider-option",
                 "device_id"])
    assert exited.value.code == 2
    assert "--provider-option device_id: expected key=value" in capsys.readouterr().err


def test_every_option_of_the_table_is_accepted_as_the_command_line_spells_it():
    """parley.distributed's arguments are made from the table: each Dask option, given a valid
    value as ``parley diarize`` spells its flag, reaches the options handed to the engine."""
    parser, names = pd._parser()
    given = ["--local", "1", "--out-dir", "out"]
    expected = {}
    for option in parley.options():
        if not option["faces"]["dask"]:
            continue
        flag = option["faces"]["cli"] or "--" + option["name"].replace("_", "-")
        kind = option["type"]
        value = {"number": 2.0, "integer": 3, "flag": True}.get(kind)
        if kind == "choice":
            value = option["choices"][-1]
        elif kind in ("text", "path"):
            value = "0"
        elif kind == "list":
            value = ["device_id=0"]
        assert value is not None, f"no test value for {option['name']} ({kind})"
        given += ([flag] if kind == "flag" else
                  [flag, value[0]] if kind == "list" else [flag, str(value)])
        expected[option["name"]] = value
    arguments = parser.parse_args(given)
    assert sorted(names) == sorted(expected)
    assert {name: getattr(arguments, name) for name in names} == expected
    # The engine takes each of them (parley.Pipeline's keywords), the format aside; exclusive is
    # how the batch writes each result.
    assert set(expected) - {"format"} <= (set(pd.PIPELINE_OPTIONS) | set(pd.SPEAKER_OPTIONS)
                                          | set(pd.RESULT_OPTIONS))
