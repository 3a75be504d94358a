"""parley.Stream on a real recording (the segmentation model and the embedding speed twin, so
the speakers are noise but the events' shape, determinism and bookkeeping are real)."""
import json
import os
import subprocess

import numpy as np
import pytest

import parley

MODELS = os.environ.get("PARLEY_TEST_MODELS", "")
EVAL = os.environ.get("PARLEY_TEST_EVAL", "")
CLI = os.environ.get("PARLEY_TEST_CLI", "")
FALCON = os.path.join(EVAL, "falcon-test", "test.wav")

if not (os.path.isdir(MODELS) and os.path.isfile(FALCON)):
    pytest.fail("set PARLEY_TEST_MODELS and PARLEY_TEST_EVAL (run through run_pytest.sh)",
                pytrace=False)


@pytest.fixture(scope="module")
def pipeline():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", parley.SpeedTwinWarning)
        return parley.Pipeline(models_dir=MODELS, threads=2)


@pytest.fixture(scope="module")
def pcm():
    import wave

    with wave.open(FALCON) as audio:
        assert audio.getframerate() == 16000 and audio.getnchannels() == 1
        return audio.readframes(audio.getnframes())


def decisions(events):
    return [(e.type, e.speaker, e.start, e.end, e.audio_time) for e in events]


def run(pipeline, chunks, **settings):
    # A 2 s step: a quarter of the default's model calls, so that the suite stays short.
    settings.setdefault("step", 2.0)
    events = []
    with parley.Stream(pipeline, **settings) as stream:
        for chunk in chunks:
            stream.push(chunk)
            events += stream.events()
    events += stream.events()
    return events, stream.result


def test_events_do_not_depend_on_chunks_or_sample_type(pipeline, pcm):
    floats = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    by_floats, result = run(pipeline, [floats[i:i + 1000] for i in range(0, len(floats), 1000)])
    by_bytes, _ = run(pipeline, [pcm[i:i + 8820] for i in range(0, len(pcm), 8820)])
    assert by_floats and decisions(by_floats) == decisions(by_bytes)
    assert {e.type for e in by_floats} <= {"turn_start", "turn_end"}
    ends = [e for e in by_floats if e.type == "turn_end"]
    assert len(ends) == len(result.turns)
    assert sorted((e.start, e.end, e.speaker) for e in ends) == \
        sorted((t.start, t.end, t.speaker) for t in result.turns)
    assert all(e.latency >= 0 for e in by_floats)
    assert abs(result.duration - len(floats) / 16000) < 1e-6


def test_provisional_updates_and_settings(pipeline, pcm):
    events, _ = run(pipeline, [pcm], provisional=True, latency=3.0)
    assert any(e.type == "turn_update" for e in events)
    with pytest.raises(parley.InvalidArgument, match="latency"):
        parley.Stream(pipeline, latency=9)
    with pytest.raises(parley.ArgumentTypeError):
        parley.Stream("not a pipeline")
    stream = parley.Stream(pipeline)
    with pytest.raises(parley.InvalidArgument):
        stream.push(b"\x00")  # half a sample
    stream.finish()
    with pytest.raises(parley.InvalidArgument):
        stream.push(b"\x00\x00")


@pytest.mark.skipif(not CLI, reason="the parley command is not built")
def test_keywords_are_the_stream_option_table(pipeline):
    """Stream's keywords take the defaults of the stream's option table (`parley options
    --stream --json`) and refuse, with the table's message, a value past each of its bounds."""
    import inspect

    table = json.loads(subprocess.run([CLI, "options", "--stream", "--json"], check=True,
                                      capture_output=True, text=True).stdout)
    keywords = inspect.signature(parley.Stream).parameters
    offered = [option for option in table if option["faces"]["python"]]
    assert {option["name"] for option in offered} <= set(keywords)
    for option in offered:
        name, low, high = option["name"], option["minimum"], option["maximum"]
        assert keywords[name].default == option["default"], name
        if option["type"] not in ("number", "integer") or high is None:
            continue
        step = 1 if option["type"] == "integer" else 0.01
        bounds = f"{name}: must be {low:g} to {high:g}"
        for value in (low - step, high + step):
            with pytest.raises(parley.InvalidArgument, match=bounds):
                stream = parley.Stream(pipeline, **{name: value})
                # channels are the pushed samples': checked by the C API at each push.
                stream.push(np.zeros(0, dtype=np.float32))


def test_final_recluster_is_the_batch_diarization(pipeline, pcm):
    _, archived = run(pipeline, [pcm], final_recluster=True)
    batch = pipeline(FALCON)
    assert [(t.start, t.end) for t in archived.turns] == [(t.start, t.end) for t in batch.turns]
    names = {}
    for live, offline in zip(archived.turns, batch.turns):
        assert names.setdefault(offline.speaker, live.speaker) == live.speaker
    # Batch output: its speakers (labels without gaps) and an embedding row each.
    assert archived.speakers == batch.speakers
    assert set(names.values()) == {turn.speaker for turn in batch.turns}


@pytest.mark.skipif(not CLI, reason="the parley command is not built")
def test_same_events_as_the_command_line(pipeline, pcm, tmp_path):
    events, result = run(pipeline, [pcm])
    rttm = tmp_path / "out.rttm"
    command = subprocess.run([CLI, "stream", "--quiet", "--models", MODELS, "--threads", "2",
                              "--step", "2", "-o", str(rttm), FALCON],
                             check=True, capture_output=True, text=True)
    lines = [json.loads(line) for line in command.stdout.splitlines()]
    assert [(d["type"], d["speaker"], round(d["start"], 3), round(d.get("end", d["start"]), 3),
             round(d["audio_time"], 3)) for d in lines] == \
        [(e.type, e.speaker, round(e.start, 3), round(e.end, 3), round(e.audio_time, 3))
         for e in events]
    assert rttm.read_text() == result.to_rttm(uri="test")
    # Raw PCM on standard input gives the same events.
    piped = subprocess.run([CLI, "stream", "--quiet", "--models", MODELS, "--threads", "2",
                            "--step", "2", "--raw", "--rate", "16000", "--format", "s16le", "-"],
                           input=pcm, check=True, capture_output=True)
    assert [json.loads(line)["start"] for line in piped.stdout.decode().splitlines()] == \
        [d["start"] for d in lines]
