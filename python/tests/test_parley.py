"""The Python bindings on real recordings (../shared/eval), run by run_pytest.sh with a models
folder holding the segmentation model, the PLDA and the ResNet34 speed twin."""
import decimal
import fractions
import gc
import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time
import warnings
import wave

import numpy as np
import pytest

import parley

MODELS = os.environ.get("PARLEY_TEST_MODELS", "")
EVAL = os.environ.get("PARLEY_TEST_EVAL", "")
CLI = os.environ.get("PARLEY_TEST_CLI", "")
FALCON = os.path.join(EVAL, "falcon-test", "test.wav")
SAMPLE = os.path.join(EVAL, "pyannote-sample", "sample.wav")

if not (os.path.isdir(MODELS) and os.path.isfile(FALCON)):
    pytest.fail("set PARLEY_TEST_MODELS and PARLEY_TEST_EVAL (run through run_pytest.sh)",
                pytrace=False)


@pytest.fixture(scope="module")
def pipeline():
    return parley.Pipeline(models_dir=MODELS, threads=2)


@pytest.fixture(scope="module")
def falcon(pipeline):
    return pipeline(FALCON)


def read_wav(path):
    with wave.open(path) as audio:
        assert audio.getsampwidth() == 2 and audio.getnchannels() == 1
        rate = audio.getframerate()
        samples = np.frombuffer(audio.readframes(audio.getnframes()), dtype="<i2")
    return samples.astype(np.float32) / 32768.0, rate


def speech_seconds(turns):
    return sum(turn.end - turn.start for turn in turns)


@pytest.mark.skipif(not CLI, reason="the parley command is not built")
@pytest.mark.parametrize("path", [FALCON, SAMPLE])
def test_same_rttm_as_the_command_line(pipeline, path):
    command = subprocess.run([CLI, "diarize", "--quiet", "--models", MODELS, path],
                             check=True, capture_output=True, text=True)
    assert pipeline(path).to_rttm() == command.stdout
    assert command.stdout.startswith("SPEAKER ")


def test_result_fields(falcon):
    assert falcon.uri == "test"
    assert 18.0 < falcon.duration < 20.0
    assert falcon.turns and all(turn.end > turn.start for turn in falcon.turns)
    assert {turn.speaker for turn in falcon.turns} <= set(falcon.speakers)
    assert falcon.speakers == [f"SPEAKER_{i:02d}" for i in range(len(falcon.speakers))]
    assert falcon.embeddings.shape == (len(falcon.speakers), 256)
    assert falcon.embeddings.dtype == np.float32
    assert np.all(np.linalg.norm(falcon.embeddings, axis=1) > 0)
    exclusive = falcon.exclusive()
    assert exclusive and speech_seconds(exclusive) <= speech_seconds(falcon.turns) + 1e-6
    tracks = list(falcon.itertracks(yield_label=True))
    assert [(segment.start, segment.end, label) for segment, _, label in tracks] == [
        (turn.start, turn.end, turn.speaker) for turn in falcon.turns]
    assert len(next(falcon.itertracks())) == 2
    document = json.loads(falcon.to_json())
    assert len(document["diarization"]) == len(falcon.turns)
    # The JSON's embeddings are the same float32 rows, keyed by label.
    assert list(document["speaker_embeddings"]) == falcon.speakers
    assert np.array_equal(np.array(list(document["speaker_embeddings"].values()), np.float32),
                          falcon.embeddings)
    assert "segmentation" in falcon.stage_times and "clustering" in falcon.stage_times
    assert any("speed twin" in warning for warning in falcon.warnings)
    assert falcon.to_rttm("other").startswith("SPEAKER other 1 ")


def test_pyannote_names_and_the_exclusive_attribute(falcon):
    # pyannote.audio's DiarizeOutput: for turn, speaker in output.speaker_diarization.
    pairs = list(falcon.speaker_diarization)
    assert [(segment.start, segment.end, speaker) for segment, speaker in pairs] == [
        (turn.start, turn.end, turn.speaker) for turn in falcon.turns]
    assert len(falcon.speaker_diarization) == len(falcon.turns)
    assert set(falcon.speaker_diarization.labels()) <= set(falcon.speakers)
    exclusive = [(segment.start, segment.end, speaker)
                 for segment, speaker in falcon.exclusive_speaker_diarization]
    assert exclusive == [(turn.start, turn.end, turn.speaker) for turn in falcon.exclusive]
    assert np.array_equal(falcon.speaker_embeddings, falcon.embeddings)
    # exclusive is an attribute like turns; calling it, as when it was a method, gives the same.
    assert isinstance(falcon.exclusive, list) and falcon.exclusive() == falcon.exclusive


@pytest.mark.skipif(not CLI, reason="the parley command is not built")
@pytest.mark.parametrize("format", parley.FORMATS)
@pytest.mark.parametrize("exclusive", [False, True])
def test_every_format_as_the_command_line_writes_it(falcon, format, exclusive):
    command = subprocess.run([CLI, "diarize", "--quiet", "--models", MODELS, "--threads", "2",
                              "--format", format, FALCON] + (["--exclusive"] if exclusive else []),
                             check=True, capture_output=True, text=True)
    assert falcon.to_format(format, exclusive=exclusive) == command.stdout


@pytest.mark.skipif(not CLI, reason="the parley command is not built")
def test_a_batch_writes_the_exclusive_turns_into_a_folder_as_the_command_line(pipeline, tmp_path):
    # pyannote's sample has overlapped speech: its exclusive turns differ.
    sample = pipeline(SAMPLE)
    out_dir = tmp_path / "out"
    batch = parley._parley.Batch(parley._settings(models_dir=MODELS, threads=2))
    batch.submit_to(os.fsencode(SAMPLE), os.fsencode(out_dir), "txt", None, None, None, None,
                    exclusive=True)
    batch.finish()
    index, result = batch.next()
    assert index == 0 and not isinstance(result, str)
    written = (out_dir / "sample.txt").read_text()
    assert written == sample.to_format("txt", exclusive=True)
    assert written != sample.to_format("txt")
    # The command line takes what the batch wrote for its own --exclusive run, and only that.
    record = out_dir / ".parley" / "sample.txt.json"
    before = record.read_bytes()
    command = subprocess.run([CLI, "diarize", "--models", MODELS, "--threads", "2", "--format",
                              "txt", "--exclusive", "--out-dir", str(out_dir), SAMPLE],
                             check=True, capture_output=True, text=True)
    assert "1 of 1 recordings done earlier" in command.stderr
    assert record.read_bytes() == before
    subprocess.run([CLI, "diarize", "--quiet", "--models", MODELS, "--threads", "2", "--format",
                    "txt", "--out-dir", str(out_dir), SAMPLE], check=True)
    assert (out_dir / "sample.txt").read_text() == sample.to_format("txt")


@pytest.mark.skipif(not CLI, reason="the parley command is not built")
def test_one_file_goes_where_the_plan_says_with_the_placement_of_the_c_api(pipeline, tmp_path):
    """The one-recording path of `parley diarize` (--save-intermediates takes it) writes into
    --out-dir where the engine's plan puts the recording, with the settings (providers included)
    a C API run of the same options fingerprints: the plan finds it finished. Its turns are the
    library's and `parley diarize FILE`'s."""
    out_dir = tmp_path / "out"
    subprocess.run([CLI, "diarize", "--quiet", "--models", MODELS, "--out-dir", str(out_dir),
                    "--save-intermediates", str(tmp_path / "saved"), FALCON], check=True)
    plan = json.loads(parley._parley.corpus_plan_json(
        parley._settings(models_dir=MODELS), [os.fsencode(FALCON)], os.fsencode(str(out_dir)),
        ["rttm"]))
    output = plan["recordings"][0]["outputs"][0]
    assert output["output"] == str(out_dir / "test.rttm")
    assert output["finished"] is True
    printed = subprocess.run([CLI, "diarize", "--quiet", "--models", MODELS, FALCON],
                             check=True, capture_output=True, text=True).stdout
    assert (out_dir / "test.rttm").read_text() == printed == pipeline(FALCON).to_rttm()


def test_the_plan_of_a_run_keeps_the_bytes_of_a_name(tmp_path):
    """parley_corpus_plan_json's names come back byte for byte, even those that are not UTF-8
    (escaped lone surrogates, which json.loads and os.fsencode turn back into the bytes)."""
    odd = os.fsencode(str(tmp_path)) + b"/caf\xe9.wav"
    again = os.fsencode(str(tmp_path)) + b"/./caf\xe9.wav"
    plan = json.loads(parley._parley.corpus_plan_json(parley._parley.Settings(), [odd, again],
                                                      None, []))
    assert [os.fsencode(recording["name"]) for recording in plan["recordings"]] == [b"caf\xe9"]
    assert os.fsencode(plan["recordings"][0]["audio"]) == odd
    assert plan["repeats"] == [{"index": 1, "first": 0}]
    # Into a folder: each format's output and record, nothing finished yet.
    plan = json.loads(parley._parley.corpus_plan_json(
        parley._settings(models_dir=MODELS), [odd], os.fsencode(str(tmp_path / "out")),
        ["rttm", "json"]))
    outputs = plan["recordings"][0]["outputs"]
    assert [os.fsencode(output["output"]) for output in outputs] == [
        os.fsencode(str(tmp_path / "out")) + b"/caf\xe9." + suffix for suffix in (b"rttm", b"json")]
    assert os.fsencode(outputs[0]["record"]) == (os.fsencode(str(tmp_path / "out"))
                                                 + b"/.parley/caf\xe9.rttm.json")
    assert plan["recordings"][0]["finished"] is False


def test_write_takes_the_format_from_the_extension(falcon, tmp_path):
    falcon.write(tmp_path / "turns.vtt", exclusive=True)
    assert (tmp_path / "turns.vtt").read_text() == falcon.to_format("vtt", exclusive=True)
    falcon.write(tmp_path / "turns.out", format="srt")
    assert (tmp_path / "turns.out").read_text().startswith("1\n00:00:")
    with pytest.raises(parley.InvalidArgument, match="format"):
        falcon.write(tmp_path / "turns.docx")
    with pytest.raises(parley.InvalidArgument, match="format must be one of"):
        falcon.to_format("docx")
    assert sorted(os.listdir(tmp_path)) == ["turns.out", "turns.vtt"]
    # Written by the engine's atomic write, as the command line writes: a read-only file is
    # refused and left as it was, and no temporary file stays behind.
    os.chmod(tmp_path / "turns.vtt", 0o444)
    with pytest.raises(parley.Error, match="read-only"):
        falcon.write(tmp_path / "turns.vtt", format="rttm")
    assert (tmp_path / "turns.vtt").read_text() == falcon.to_format("vtt", exclusive=True)
    assert sorted(os.listdir(tmp_path)) == ["turns.out", "turns.vtt"]


def test_pyannote_hook_and_progress_are_called(pipeline):
    calls = []

    def hook(step_name, step_artifact, file=None, total=None, completed=None):
        calls.append((step_name, step_artifact, file, total, completed))

    fractions_seen = []
    pipeline(FALCON, hook=hook, progress=lambda fraction, stage: fractions_seen.append(fraction))
    assert fractions_seen and calls
    steps = [name for name, *_ in calls]
    assert "clustering" in steps and any("embeddings" in name for name in steps)
    assert all(artifact is None and file == {"audio": FALCON} and total == 100
               and 0 <= completed <= 100 for _, artifact, file, total, completed in calls)
    # A hook given to the pipeline serves every call.
    hooked = parley.Pipeline(models_dir=MODELS, threads=2, hook=hook)
    calls.clear()
    hooked(FALCON)
    assert calls
    with pytest.raises(parley.ArgumentTypeError, match="hook"):
        pipeline(FALCON, hook=3)


def test_device_id_is_a_pipeline_argument():
    # The same rule as provider_options={"device_id": N}: the cpu provider takes no device.
    with pytest.raises(parley.InvalidArgument, match="device_id"):
        parley.Pipeline(models_dir=MODELS, provider="cpu", device_id=0)
    with pytest.raises(parley.InvalidArgument, match="device_id"):
        parley.Pipeline(models_dir=MODELS, device_id=-2)


def test_keywords_follow_the_option_table():
    """Every option the table gives Python is a keyword of Pipeline or of its call, with the
    table's default: a face that lacks one or defaults otherwise fails here."""
    import inspect

    keywords = dict(inspect.signature(parley.Pipeline.__init__).parameters)
    keywords.update(inspect.signature(parley.Pipeline.__call__).parameters)
    table = parley.options()
    python_options = [option for option in table if option["faces"]["python"]]
    assert {"devices", "engines", "jobs", "embedding_features"} <= {
        option["name"] for option in python_options}
    # The formats Diarization.to_format writes are the table's.
    formats = next(option for option in table if option["name"] == "format")
    assert parley.FORMATS == tuple(formats["choices"])
    for option in python_options:
        assert option["name"] in keywords, f"Pipeline lacks the option {option['name']}"
        default = keywords[option["name"]].default
        expected = option["default"]
        if option["type"] == "list" and expected == []:
            expected = None  # provider_options=None: none, as the table's empty list
        assert default == expected, f"{option['name']}: {default!r} != table {expected!r}"
    # An option the table does not give Python (the transcript's, the corpus linking's, ...) is
    # no keyword, and the table says why Python lacks it: a keyword added beside the table fails.
    for option in table:
        if not option["faces"]["python"]:
            assert option["name"] not in keywords, f"Pipeline takes {option['name']}, which the " \
                "table does not give Python"
            assert option["faces_note"], f"{option['name']}: the table says not why Python lacks it"


@pytest.mark.parametrize("keyword, value, message", [
    ("step", 11, "step: must be 0.1 to 10 (got 11)"),
    ("step", 11.0, "step: must be 0.1 to 10 (got 11)"),
    ("jobs", 0, "jobs: must be 1 to 256 (got 0)"),
    ("ahc_threshold", 3, "ahc_threshold: must be 0 to 2 (got 3)"),
    ("segmentation_sessions", 0, "segmentation_sessions: must be at least 1 (got 0)"),
    ("cuda_graph", "maybe", "cuda_graph: expected one of off, on (got 'maybe')"),
    ("embedding_features", "gpu", "embedding_features: expected one of auto, host, graph (got "
                                  "'gpu')")])
def test_pipeline_messages_are_the_engines(keyword, value, message):
    """The engine checks the keywords (the C API's named options): its message, word for word
    what the C API gives (c_options_test.cpp) and the command line after its flag."""
    with pytest.raises(parley.InvalidArgument) as raised:
        parley.Pipeline(models_dir=MODELS, **{keyword: value})
    assert str(raised.value) == message
    if CLI:
        flag = "--" + keyword.replace("_", "-")
        printed = subprocess.run([CLI, "diarize", "x.wav", flag, str(value).replace(".0", "")],
                                 capture_output=True, text=True)
        assert printed.returncode == 2
        assert f"{flag}: {message.split(': ', 1)[1]}" in printed.stderr


def test_every_engine_option_is_a_keyword_the_engine_checks():
    """The options that were the command line's only (the per-model providers, batch sizes,
    float16, ...) are keywords, checked together by the engine as the CLI's flags are."""
    with pytest.raises(parley.InvalidArgument,
                       match=r"^force_cpu: contradicts embedding_provider cuda; drop one of them$"):
        parley.Pipeline(models_dir=MODELS, force_cpu=True, embedding_provider="cuda")
    with pytest.raises(parley.InvalidArgument,
                       match=r"^ahc_threshold: applies to clustering ahc only$"):
        parley.Pipeline(models_dir=MODELS, ahc_threshold=0.5)
    tuned = parley.Pipeline(models_dir=MODELS, threads=2, step=2, clustering="ahc",
                            ahc_threshold=0.5, embedding_batch=8, segmentation_batch=2,
                            no_streaming=True, sincnet_per_chunk=True, force_cpu=True,
                            segmentation_provider="cpu")
    assert tuned(FALCON).turns


def test_speaker_count_per_call(pipeline):
    assert len(pipeline(FALCON, num_speakers=2).speakers) == 2
    assert len(pipeline(FALCON, min_speakers=3, max_speakers=3).speakers) == 3


@pytest.mark.parametrize("rate", [8000, 16000, 44100])
def test_numpy_input_at_any_rate(pipeline, falcon, rate):
    samples, file_rate = read_wav(FALCON)
    assert file_rate == 16000
    if rate != file_rate:
        # Linear interpolation is enough here: parley resamples back to 16 kHz itself.
        times = np.arange(int(len(samples) * rate / file_rate)) / rate
        samples = np.interp(times, np.arange(len(samples)) / file_rate, samples).astype(np.float32)
    result = pipeline(samples, sample_rate=rate)
    assert result.uri == "audio"
    assert abs(result.duration - falcon.duration) < 0.01
    if rate == 16000:
        assert result.to_rttm("test") == falcon.to_rttm()
    else:
        assert abs(speech_seconds(result.turns) - speech_seconds(falcon.turns)) < 1.5
    # float64 arrays are converted
    if rate == 16000:
        assert pipeline(samples.astype(np.float64)).to_rttm("test") == falcon.to_rttm()


def test_progress_reports_then_can_stop(pipeline):
    reports = []
    pipeline(FALCON, progress=lambda fraction, stage: reports.append((stage, fraction)))
    assert reports[0] == ("segmentation+embedding", 0.0)
    assert reports[-1] == ("clustering", 1.0)
    assert all(0.0 <= fraction <= 1.0 for _, fraction in reports)
    # Each stage reports 1.0 once, and no report comes twice.
    stages = {stage for stage, _ in reports}
    assert sorted(stage for stage, fraction in reports if fraction == 1.0) == sorted(stages)
    assert all(a != b for a, b in zip(reports, reports[1:]))

    calls = []

    def stop_at_second_call(fraction, stage):
        calls.append(stage)
        return len(calls) == 2

    with pytest.raises(parley.Cancelled, match="cancelled by the progress callback"):
        pipeline(FALCON, progress=stop_at_second_call)
    assert len(calls) == 2
    assert issubclass(parley.Cancelled, parley.Error)

    def fails(fraction, stage):
        raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback"):
        pipeline(FALCON, progress=fails)
    # The pipeline still works afterwards.
    assert pipeline(FALCON).turns


def test_bad_input_raises_parley_error(pipeline, tmp_path):
    missing = str(tmp_path / "missing.wav")
    with pytest.raises(parley.Error, match="missing.wav"):
        pipeline(missing)
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(b"RIFF not really audio")
    with pytest.raises(parley.Error, match="garbage.wav"):
        pipeline(str(garbage))
    with pytest.raises(parley.Error, match="1-D"):
        pipeline(np.zeros((2, 16000), dtype=np.float32))
    with pytest.raises(parley.Error, match="int16"):
        pipeline(np.zeros(16000, dtype=np.int16))
    with pytest.raises(parley.Error, match="sample_rate"):
        pipeline(np.zeros(16000, dtype=np.float32), sample_rate=0)
    with pytest.raises(parley.Error, match="not a finite number"):
        pipeline(np.full(16000, np.nan, dtype=np.float32))
    with pytest.raises(parley.Error, match="num_speakers"):
        pipeline(FALCON, num_speakers=0)
    with pytest.raises(parley.Error, match="file path or a numpy array"):
        pipeline(42)
    with pytest.raises(parley.Error, match="unknown execution provider"):
        parley.Pipeline(models_dir=MODELS, provider="nonsense")
    with pytest.raises(parley.Error, match="cpu provider"):
        parley.Pipeline(models_dir=MODELS, provider="cpu", provider_options={"device_id": 0})
    with pytest.raises(parley.Error, match="models_dir"):
        parley.Pipeline(models_dir=str(tmp_path / "nowhere"))
    with pytest.raises(parley.Error, match="clustering"):
        parley.Pipeline(models_dir=MODELS, clustering="kmeans")
    with pytest.raises(parley.Error, match="embedding_mode"):
        parley.Pipeline(models_dir=MODELS, embedding_mode="fast")


def test_threads_each_with_their_own_pipeline(falcon):
    results = [None] * 4
    errors = []

    def work(slot):
        try:
            results[slot] = parley.Pipeline(models_dir=MODELS, threads=1)(FALCON).to_rttm()
        except Exception as error:  # reported below, with the thread's slot
            errors.append((slot, error))

    threads = [threading.Thread(target=work, args=(slot,)) for slot in range(len(results))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert results == [falcon.to_rttm()] * len(results)


def test_map_streams_results_from_the_corpus_engine(pipeline, falcon):
    results = dict(pipeline.map([FALCON, SAMPLE]))
    assert sorted(results) == sorted([FALCON, SAMPLE])
    assert results[FALCON].to_rttm() == falcon.to_rttm()
    assert results[SAMPLE].to_rttm() == pipeline(SAMPLE).to_rttm()
    with pytest.raises(parley.Error, match="missing.wav"):
        list(pipeline.map([os.path.join(EVAL, "missing.wav")]))


def test_map_a_bad_file_fails_alone(pipeline, falcon):
    missing = os.path.join(EVAL, "missing.wav")
    paths = [FALCON, missing, SAMPLE, FALCON]
    # By default every other file comes out first; then one error names the failed ones.
    seen = []
    with pytest.raises(parley.Error, match="1 of 4 recordings failed: .*missing.wav") as raised:
        for path, result in pipeline.map(paths):
            seen.append(path)
            assert isinstance(result, parley.Diarization)
    assert sorted(seen) == sorted([FALCON, SAMPLE, FALCON])
    assert [path for path, _ in raised.value.failures] == [missing]
    # errors="yield": the failure comes out in its turn, nothing is raised.
    outcomes = list(pipeline.map(paths, errors="yield"))
    assert sorted(path for path, _ in outcomes) == sorted(paths)
    failed = [result for path, result in outcomes if path == missing]
    assert len(failed) == 1 and isinstance(failed[0], parley.Error)
    assert "missing.wav" in str(failed[0])
    assert all(result.to_rttm() == falcon.to_rttm() for path, result in outcomes
               if path == FALCON)
    with pytest.raises(parley.InvalidArgument, match="errors"):
        pipeline.map(paths, errors="ignore")


def test_score(falcon):
    reference = os.path.join(EVAL, "falcon-test", "test.rttm")
    assert parley.score(reference, reference).der == 0.0
    strict = parley.score(reference, falcon)
    assert 0.0 < strict.der < 1.5 and strict.total > 10.0
    assert float(strict) == strict.der
    assert abs(strict.missed + strict.false_alarm + strict.confusion - strict.der * strict.total) < 1e-6
    lenient = parley.score(reference, falcon, collar=0.25, skip_overlap=True)
    assert lenient.total < strict.total
    with pytest.raises(parley.Error, match="collar"):
        parley.score(reference, falcon, collar=-1)


def test_to_annotation(falcon):
    pytest.importorskip("pyannote.core")
    annotation = falcon.to_annotation()
    assert sorted(annotation.labels()) == sorted({turn.speaker for turn in falcon.turns})


def test_version():
    assert parley.__version__ == parley._parley.version() and parley.__version__


# ---- Hostile input ---------------------------------------------------------------------------

def noise(seconds=1.0, rate=16000):
    return (np.random.default_rng(0).standard_normal(int(seconds * rate)) * 0.01).astype(
        np.float32)


@pytest.fixture(scope="module")
def long_recording(tmp_path_factory):
    """Falcon's recording 20 times over (6.3 min): a run that takes many progress steps."""
    samples, rate = read_wav(FALCON)
    path = tmp_path_factory.mktemp("long") / "long.wav"
    with wave.open(str(path), "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(rate)
        audio.writeframes((np.tile(samples, 20) * 32767).astype("<i2").tobytes())
    return str(path)


def test_error_classes():
    assert issubclass(parley.InvalidArgument, parley.Error)
    assert issubclass(parley.InvalidArgument, ValueError)
    assert issubclass(parley.ArgumentTypeError, parley.Error)
    assert issubclass(parley.ArgumentTypeError, TypeError)


def test_threads_share_one_pipeline(pipeline, falcon):
    """Calls from several threads on one Pipeline take turns (they crashed the process)."""
    results = []
    errors = []

    def work():
        try:
            for _ in range(2):
                results.append(pipeline(FALCON).to_rttm())
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert results == [falcon.to_rttm()] * 6


def test_a_pipeline_cannot_run_inside_its_own_progress_callback(pipeline):
    def reenter(fraction, stage):
        pipeline(FALCON)

    with pytest.raises(parley.InvalidArgument, match="own progress callback"):
        pipeline(FALCON, progress=reenter)
    assert pipeline(FALCON).turns


def test_two_pipelines_calling_each_other_from_callbacks_do_not_deadlock(pipeline):
    """Each thread, inside its pipeline's callback, calls the pipeline the other thread runs:
    waiting there would wait forever, so the inner call is refused at once instead."""
    other = parley.Pipeline(models_dir=MODELS, threads=2)
    inside = [threading.Event(), threading.Event()]
    outcomes = [None, None]

    def run(index, mine, theirs):
        def callback(fraction, stage):
            if outcomes[index] is not None:
                return
            inside[index].set()
            inside[1 - index].wait(30)
            try:
                theirs(FALCON)
                outcomes[index] = "ran"
            except parley.InvalidArgument as error:
                outcomes[index] = str(error)
        mine(FALCON, progress=callback)

    threads = [threading.Thread(target=run, args=(0, pipeline, other)),
               threading.Thread(target=run, args=(1, other, pipeline))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads), "the two calls waited for each other"
    assert all(outcome is not None and "running a call on another thread" in outcome
               for outcome in outcomes), outcomes


@pytest.mark.parametrize("rate, error", [
    (1, parley.InvalidArgument), (7, parley.InvalidArgument), (999, parley.InvalidArgument),
    (768001, parley.InvalidArgument), (-16000, parley.InvalidArgument),
    (2**64, parley.InvalidArgument), (16000.5, parley.InvalidArgument),
    (float("nan"), parley.InvalidArgument), ("16000", parley.ArgumentTypeError),
    (True, parley.ArgumentTypeError), (None, parley.ArgumentTypeError)])
def test_sample_rate_is_bounded_like_a_file_header(pipeline, rate, error):
    """sample_rate=1 read 4 s as 17.8 h (8.2 GB); now only the rates a file may declare."""
    with pytest.raises(error, match="sample_rate"):
        pipeline(noise(), sample_rate=rate)


def test_sample_rate_bounds_are_the_librarys():
    """parley.MIN/MAX_SAMPLE_RATE come from libparley (parley.h's PARLEY_MIN/MAX_SAMPLE_RATE,
    which parley_c_api.cpp holds equal to the audio decoder's bounds at compile time), not copies
    that could drift."""
    import re

    from parley import _parley

    assert (parley.MIN_SAMPLE_RATE, parley.MAX_SAMPLE_RATE) == (_parley.MIN_SAMPLE_RATE,
                                                                _parley.MAX_SAMPLE_RATE)
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "parley", "parley.h")
    if not os.path.exists(header):
        pytest.skip("the C header is not beside this test (an installed package)")
    with open(header, encoding="utf-8") as file:
        text = file.read()
    for name, value in (("MIN", parley.MIN_SAMPLE_RATE), ("MAX", parley.MAX_SAMPLE_RATE)):
        match = re.search(rf"^#define PARLEY_{name}_SAMPLE_RATE\s+(\d+)", text, re.M)
        assert match, f"parley.h no longer defines PARLEY_{name}_SAMPLE_RATE"
        assert value == int(match.group(1))


def test_sample_rate_may_be_a_whole_float_or_numpy_int(pipeline):
    assert pipeline(noise(), sample_rate=16000.0).duration == pytest.approx(1.0)
    assert pipeline(noise(rate=8000), sample_rate=np.int32(8000)).duration == pytest.approx(1.0)


@pytest.mark.parametrize("keyword, value, error", [
    ("num_speakers", 2**64, parley.InvalidArgument),
    ("num_speakers", 1001, parley.InvalidArgument),
    ("min_speakers", -1, parley.InvalidArgument),
    ("max_speakers", 2**31, parley.InvalidArgument),
    ("num_speakers", 1.5, parley.InvalidArgument),
    ("num_speakers", "2", parley.ArgumentTypeError),
    ("progress", 3, parley.ArgumentTypeError)])
def test_call_keywords_are_bounded(pipeline, keyword, value, error):
    with pytest.raises(error, match=keyword):
        pipeline(FALCON, **{keyword: value})


def test_the_speaker_bound_is_the_engines(pipeline):
    """The engine's check and message (SpeakerCountConstraints), as the C API shows it."""
    with pytest.raises(parley.InvalidArgument) as raised:
        pipeline(FALCON, max_speakers=1001)
    assert str(raised.value) == "max_speakers must be 1 to 1000 (got 1001)"


@pytest.mark.parametrize("keyword, value, error", [
    ("step", 0.01, parley.InvalidArgument), ("step", float("inf"), parley.InvalidArgument),
    ("step", float("nan"), parley.InvalidArgument), ("step", "1", parley.ArgumentTypeError),
    ("threads", -1, parley.InvalidArgument), ("threads", 2**40, parley.InvalidArgument),
    ("threads", 10**6, parley.InvalidArgument), ("provider", None, parley.ArgumentTypeError),
    ("provider_options", ["device_id=0"], parley.ArgumentTypeError),
    ("provider_options", {"a=b": 1}, parley.InvalidArgument),
    ("models_dir", 3, parley.ArgumentTypeError),
    ("jobs", 257, parley.InvalidArgument), ("jobs", 1.5, parley.InvalidArgument),
    ("engines", 0, parley.InvalidArgument), ("devices", 0, parley.ArgumentTypeError),
    ("devices", "", parley.InvalidArgument), ("embedding_features", None, parley.ArgumentTypeError),
    ("models_dir", MODELS + "\0junk", parley.InvalidArgument),
    ("clustering", "vbx\0", parley.InvalidArgument)])
def test_pipeline_keywords_are_bounded(keyword, value, error):
    arguments = dict(models_dir=MODELS, threads=1)
    arguments[keyword] = value
    with pytest.raises(error, match=keyword):
        parley.Pipeline(**arguments)


def test_nul_in_a_path_is_refused(pipeline, tmp_path):
    """"short.wav\\0junk" was diarized as short.wav."""
    with pytest.raises(parley.InvalidArgument, match="NUL"):
        pipeline(FALCON + "\0junk")
    with pytest.raises(parley.InvalidArgument, match="NUL"):
        pipeline(os.fsencode(FALCON) + b"\0junk")
    with pytest.raises(parley.InvalidArgument, match="NUL"):
        pipeline.map([FALCON, FALCON + "\0junk"])
    with pytest.raises(parley.InvalidArgument, match="NUL"):
        parley.score(str(tmp_path / "a.rttm\0b"), FALCON_RTTM)


def test_file_names_that_are_not_utf8(pipeline, falcon, tmp_path):
    folder = os.fsencode(str(tmp_path))
    name = folder + b"/caf\xe9.wav"
    shutil.copyfile(FALCON, name)
    by_bytes = pipeline(name)
    assert by_bytes.uri == os.fsdecode(b"caf\xe9")
    assert by_bytes.to_rttm("test") == falcon.to_rttm()
    assert pipeline(os.fsdecode(name)).to_rttm("test") == falcon.to_rttm()
    assert [path for path, _ in pipeline.map([name])] == [name]
    with pytest.raises(parley.Error, match=r"missing\\xe9"):
        pipeline(folder + b"/missing\xe9.wav")


def test_uris_rttm_cannot_hold(falcon):
    """parley_result_rttm(r, "a b\\nc") aborted the process."""
    for uri in ["a b\nc", "a b", "tab\there", "line\nbreak"]:
        with pytest.raises(parley.InvalidArgument, match="uri"):
            falcon.to_rttm(uri)
    with pytest.raises(parley.ArgumentTypeError, match="uri"):
        falcon.to_rttm(42)
    with pytest.raises(parley.InvalidArgument, match="uri"):
        falcon.to_rttm("a\0b")
    assert falcon.to_rttm("fine").startswith("SPEAKER fine 1 ")


FALCON_RTTM = os.path.join(EVAL, "falcon-test", "test.rttm")


def test_score_tells_paths_from_text(falcon, tmp_path):
    """score('/nonexistent.rttm', d) parsed the path as RTTM text."""
    with pytest.raises(parley.Error, match="nonexistent.rttm"):
        parley.score("/nonexistent.rttm", falcon)
    with pytest.raises(parley.Error, match="nonexistent.rttm"):
        parley.score(falcon, tmp_path / "nonexistent.rttm")
    text = open(FALCON_RTTM).read()
    assert parley.score(text, text).der == 0.0
    first_line = text.splitlines()[0]
    assert parley.score(first_line, first_line).der == 0.0
    import pathlib
    assert parley.score(pathlib.Path(FALCON_RTTM), FALCON_RTTM).der == 0.0
    with pytest.raises(parley.Error, match="reference"):
        parley.score(str(tmp_path), falcon)  # a folder


@pytest.mark.parametrize("collar, error", [
    (float("inf"), parley.InvalidArgument), (float("nan"), parley.InvalidArgument),
    (-1, parley.InvalidArgument), ("0.25", parley.ArgumentTypeError)])
def test_score_collar_is_a_finite_number(falcon, collar, error):
    with pytest.raises(error, match="collar"):
        parley.score(FALCON_RTTM, falcon, collar=collar)


def test_score_skip_overlap_is_a_flag(falcon):
    with pytest.raises(parley.ArgumentTypeError, match="skip_overlap"):
        parley.score(FALCON_RTTM, falcon, skip_overlap="yes")
    assert parley.score(FALCON_RTTM, falcon, skip_overlap=np.bool_(True)).total > 0


def test_speed_twin_warns_once_per_pipeline_and_marks_results():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        twin = parley.Pipeline(models_dir=MODELS, threads=1)
        twin(noise())
    speed_twin = [w for w in caught if issubclass(w.category, parley.SpeedTwinWarning)]
    assert len(speed_twin) == 1
    assert "speed twin" in str(speed_twin[0].message)
    assert speed_twin[0].filename == __file__  # pointed at the caller's line
    assert twin(noise()).speed_twin is True


def interrupt_after(seconds, signalled=None):
    """Sends SIGINT after `seconds`; appends to `signalled` when the signal has been sent, since
    on a loaded machine the timer fires late and only that moment bounds what may still run."""
    def send():
        os.kill(os.getpid(), signal.SIGINT)
        if signalled is not None:
            signalled.append(time.monotonic())
    timer = threading.Timer(seconds, send)
    timer.start()
    return timer


def test_ctrl_c_stops_a_run_at_its_next_progress_step(pipeline, long_recording):
    """KeyboardInterrupt came only when the run ended. Signals are now handled at every
    progress step, before the progress callable: once the signal is in, no step runs it."""
    start = time.monotonic()
    reports = []
    signalled = []
    timer = interrupt_after(1.0, signalled)
    try:
        with pytest.raises(KeyboardInterrupt):
            pipeline(long_recording,
                     progress=lambda fraction, stage: reports.append(
                         (time.monotonic() - start, stage, fraction)))
    finally:
        timer.cancel()
    assert reports and signalled
    # Nothing after the signal; 0.05 s is for the handler to reach the main thread, less than
    # one step of the long recording.
    assert all(at < signalled[0] - start + 0.05 for at, _, _ in reports)
    assert all(stage != "clustering" for _, stage, _ in reports)  # stopped in the networks
    assert pipeline(FALCON).turns  # still usable


def test_ctrl_c_stops_map_and_drops_the_rest_at_once(pipeline):
    """map() waited without seeing Ctrl-C, and its teardown then waited 13 s for recordings
    nobody would read: now the wait sees it within a tenth of a second, and of twelve
    recordings those not started are dropped at once and those in the networks (a group of up
    to three) at their next step: far less than the twelve recordings' time. Measured against
    one recording on this machine, as busy as it is now."""
    alone_start = time.monotonic()
    pipeline(FALCON)
    alone = time.monotonic() - alone_start
    # The batch map() drives, made here so that the signal comes once the models are loaded.
    batch = parley._parley.Batch(pipeline._settings)
    for _ in range(12):
        batch.submit_file(os.fsencode(FALCON), None, None, None)
    batch.finish()
    signalled = []
    timer = threading.Timer(0.5, lambda: (signalled.append(time.monotonic()),
                                          os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            while batch.next() is not None:
                pass
        interrupted = time.monotonic()
        del batch
        gc.collect()
        torn_down = time.monotonic()
    finally:
        timer.cancel()
    assert interrupted - signalled[0] < 1.0
    assert torn_down - interrupted < 4.0 * alone


# Values of every kind a caller might pass by mistake.
HOSTILE = [None, True, False, 0, 1, -1, 3, 2**31, -2**31 - 1, 2**63, 2**64, 10**100, 10**400,
           fractions.Fraction(10**400, 3), "\ud800", 0.5, -0.0,
           1e308, -1e308, float("nan"), float("inf"), float("-inf"), "", "x", "vbx", "exact", "cpu",
           "\0", "a\0b", "\udcff", "é", " ", "a b\nc", b"", b"x", b"\xff", b"\0", [], [1], ["x"],
           (), {}, {"a": 1}, {"\0": 1}, {1: 2}, {"device_id": float("nan")}, object(), 1 + 2j,
           fractions.Fraction(1, 3), decimal.Decimal("1.5"), np.int64(3), np.float32(2.5),
           np.float64("nan"), np.bool_(True), np.zeros(3), np.zeros((2, 2), np.float32),
           np.zeros(3, np.int16), lambda *arguments: None, lambda *arguments: True]


def test_random_arguments_raise_only_parley_errors(pipeline, falcon, tmp_path):
    """A bounded fuzz of every keyword: whatever comes in, the only errors out are parley.Error
    (ArgumentTypeError for a wrong type) and the process lives."""
    chooser = random.Random(20261126)
    empty_models = str(tmp_path)  # valid settings then fail fast, without loading models
    short = noise(0.5)

    def attempt(call):
        try:
            call()
        except parley.Error:
            pass
        except Exception as error:  # anything else is the failure this test looks for
            pytest.fail(f"{type(error).__name__} escaped: {error!r}")

    construct = dict(models_dir=empty_models, provider="cpu", provider_options=None, step=1.0,
                     embedding_mode="shared", clustering="vbx", threads=1)
    run = dict(audio=short, sample_rate=16000, num_speakers=None, min_speakers=None,
               max_speakers=None, progress=None)
    rate = dict(reference=FALCON_RTTM, hypothesis=falcon, collar=0.0, skip_overlap=False)
    for _ in range(150):
        arguments = dict(construct)
        for keyword in chooser.sample(sorted(construct), chooser.randint(1, 2)):
            arguments[keyword] = chooser.choice(HOSTILE)
        attempt(lambda: parley.Pipeline(**arguments))
    for _ in range(250):
        arguments = dict(run)
        for keyword in chooser.sample(sorted(run), chooser.randint(1, 2)):
            arguments[keyword] = chooser.choice(HOSTILE)
        attempt(lambda: pipeline(**arguments))
    for _ in range(150):
        arguments = dict(rate)
        for keyword in chooser.sample(sorted(rate), chooser.randint(1, 2)):
            arguments[keyword] = chooser.choice(HOSTILE)
        attempt(lambda: parley.score(**arguments))
        attempt(lambda: falcon.to_rttm(chooser.choice(HOSTILE)))
    for _ in range(10):
        value = chooser.choice(HOSTILE)
        speakers = chooser.choice(HOSTILE)
        attempt(lambda: list(pipeline.map([value], num_speakers=speakers)))
