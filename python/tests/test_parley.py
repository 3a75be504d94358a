"""The Python bindings on real recordings (../shared/eval), run by run_pytest.sh with a models
folder holding the segmentation model, the PLDA and the ResNet34 speed twin."""
import json
import os
import subprocess
import threading
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
