"""parley.SpeakerLibrary and identification (docs/identity.md) with the speed twin: the same
audio gives the same centroids, so a speaker added from one result is named in another."""
import json
import os
import threading

import pytest

import parley

MODELS = os.environ.get("PARLEY_TEST_MODELS", "")
EVAL = os.environ.get("PARLEY_TEST_EVAL", "")
FALCON = os.path.join(EVAL, "falcon-test", "test.wav")


@pytest.fixture(scope="module")
def pipeline():
    return parley.Pipeline(models_dir=MODELS, threads=2, step=2)


def test_add_identify_remove(pipeline, tmp_path):
    first = pipeline(FALCON)
    second = pipeline(FALCON)
    library = parley.SpeakerLibrary(tmp_path / "team.db")
    assert library.add("Bob", pipeline, first, "SPEAKER_00") > 0
    entries = library.list()
    assert [e["name"] for e in entries] == ["Bob"]
    assert len(entries[0]["model_sha256"]) == 64 and entries[0]["dimension"] == 256
    named = library.identify(pipeline, second)
    assert list(named) == ["SPEAKER_00"]
    assert named["SPEAKER_00"].name == "Bob"
    assert named["SPEAKER_00"].score == pytest.approx(1.0, abs=1e-6)
    assert 0.0 <= named["SPEAKER_00"].confidence <= 1.0
    relabelled = named.relabel(second.turns)
    assert {t.speaker for t in relabelled} - {"Bob"} == set(second.speakers) - {"SPEAKER_00"}
    document = json.loads(named.json)
    assert document["identification"]["speakers"][0]["name"] == "Bob"
    # A threshold outside [-1, 1] is refused.
    with pytest.raises(parley.InvalidArgument):
        library.identify(pipeline, second, threshold=1.5)
    assert library.remove("Bob") == 1
    assert not library.identify(pipeline, second)


def test_bad_names_and_speakers(pipeline, tmp_path):
    result = pipeline(FALCON)
    library = parley.SpeakerLibrary(tmp_path / "team.db")
    with pytest.raises(parley.Error, match="one word"):
        library.add("Two words", pipeline, result, 0)
    with pytest.raises(parley.InvalidArgument):
        library.add("Bob", pipeline, result, "SPEAKER_99")
    with pytest.raises(parley.InvalidArgument):
        library.add("Bob", pipeline, result, 1000)


def test_threads_share_a_library_file(pipeline, tmp_path):
    result = pipeline(FALCON)
    path = tmp_path / "team.db"
    errors = []

    def work(index):
        try:
            library = parley.SpeakerLibrary(path)  # one object per thread
            for _ in range(5):
                library.add(f"speaker_{index}", pipeline, result, 0)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(parley.SpeakerLibrary(path).list()) == 20


def test_rename_and_merge(pipeline, tmp_path):
    result = pipeline(FALCON)
    library = parley.SpeakerLibrary(tmp_path / "team.db")
    library.add("Bob", pipeline, result, 0)
    library.add("Carol", pipeline, result, 0)
    with pytest.raises(parley.InvalidArgument, match="merge"):
        library.rename("Carol", "Bob")
    assert library.rename("Carol", "Bob", merge=True) == 1
    assert library.names() == ["Bob"]
    assert library.rename("Bob", "Dave") == 2
    assert library.rename("Nobody", "Erin") == 0
    assert library.names() == ["Dave"]


def test_export_import_round_trip_and_foreign_model(pipeline, tmp_path):
    first = pipeline(FALCON)
    second = pipeline(FALCON)
    library = parley.SpeakerLibrary(tmp_path / "team.db")
    library.add("Bob", pipeline, first, 0)
    exported = library.export_json()
    assert json.loads(exported)["format"] == "parley-speaker-library"
    copy = parley.SpeakerLibrary(tmp_path / "copy.db")
    assert copy.import_json(exported, pipeline) == 1
    assert [e["name"] for e in copy.list()] == ["Bob"]
    assert copy.identify(pipeline, second)["SPEAKER_00"].name == "Bob"
    # A voiceprint of another embedding model: refused with the pipeline, taken without it, and
    # then identification with this pipeline refuses the library.
    document = json.loads(exported)
    digest = document["voiceprints"][0]["model_sha256"]
    document["voiceprints"][0]["model_sha256"] = ("1" if digest[0] == "0" else "0") + digest[1:]
    foreign = parley.SpeakerLibrary(tmp_path / "foreign.db")
    with pytest.raises(parley.InvalidArgument, match="another embedding model"):
        foreign.import_json(json.dumps(document), pipeline)
    assert foreign.list() == []
    assert foreign.import_json(json.dumps(document)) == 1
    with pytest.raises(parley.Error, match="another embedding model"):
        foreign.identify(pipeline, second)


def test_named_result_in_every_format(pipeline, tmp_path):
    first = pipeline(FALCON)
    second = pipeline(FALCON)
    library = parley.SpeakerLibrary(tmp_path / "team.db")
    library.add("Bob", pipeline, first, 0)
    named = library.identify(pipeline, second)
    confidence = named["SPEAKER_00"].confidence
    rttm = named.to_format("rttm", uri="call")
    bob = [line for line in rttm.splitlines() if " Bob " in line]
    assert bob and all(line.split()[8] == f"{confidence:.3f}" for line in bob)
    assert all(line.split()[1] == "call" for line in rttm.splitlines())
    others = [line for line in rttm.splitlines() if " Bob " not in line]
    assert all(line.split()[8] == "<NA>" for line in others)
    assert "\nBob (1.00)\n" in named.to_format("srt")
    assert "\nBob (1.00)\n" in named.to_format("vtt", exclusive=True)
    assert " Bob (1.00)\n" in named.to_format("txt")
    assert named.to_format("json") == named.json
    with pytest.raises(parley.InvalidArgument):
        named.to_format("docx")
    # The unnamed result stays as it was.
    assert " Bob" not in second.to_format("rttm")


def test_default_threshold_is_the_engines():
    """Python's default threshold comes from the binding, which takes the C header's macro (tied
    to identity::kDefaultThreshold by a static_assert); a rebuilt header with another value, or a
    Python constant written again by hand, would differ here."""
    import inspect
    import re

    from parley import _parley, identity

    assert identity.DEFAULT_THRESHOLD == _parley.DEFAULT_IDENTIFY_THRESHOLD
    default = inspect.signature(parley.SpeakerLibrary.identify).parameters["threshold"].default
    assert default == _parley.DEFAULT_IDENTIFY_THRESHOLD
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "parley", "parley.h")
    if not os.path.exists(header):
        pytest.skip("the C header is not beside this test (an installed package)")
    with open(header, encoding="utf-8") as file:
        match = re.search(r"^#define PARLEY_DEFAULT_IDENTIFY_THRESHOLD\s+(\S+)", file.read(), re.M)
    assert match, "parley.h no longer defines PARLEY_DEFAULT_IDENTIFY_THRESHOLD"
    assert _parley.DEFAULT_IDENTIFY_THRESHOLD == float(match.group(1))


def test_pipeline_takes_the_identity_options(pipeline, tmp_path):
    """Pipeline(voiceprints=, identify_threshold=) names every result's speakers as
    SpeakerLibrary.identify does (the option table's identity options, as --voiceprints and
    --identify-threshold)."""
    first = pipeline(FALCON)
    path = tmp_path / "team.db"
    library = parley.SpeakerLibrary(path)
    library.add("Bob", pipeline, first, "SPEAKER_00")
    named_pipeline = parley.Pipeline(models_dir=MODELS, threads=2, step=2, voiceprints=path)
    result = named_pipeline(FALCON)
    assert result.identification is not None
    assert result.identification["SPEAKER_00"].name == "Bob"
    assert dict(result.identification) == dict(library.identify(named_pipeline, result))
    assert pipeline(FALCON).identification is None
    # Above every score nothing is named; the bounds and the message are the table's.
    strict = parley.Pipeline(models_dir=MODELS, threads=2, step=2, voiceprints=path,
                             identify_threshold=1.0)
    assert not strict(FALCON).identification or all(
        speaker.score >= 1.0 for speaker in strict(FALCON).identification.values())
    with pytest.raises(parley.InvalidArgument, match=r"^identify_threshold: must be -1 to 1 "):
        parley.Pipeline(models_dir=MODELS, voiceprints=path, identify_threshold=1.5)
    with pytest.raises(parley.InvalidArgument, match="no speaker library"):
        parley.Pipeline(models_dir=MODELS, voiceprints=tmp_path / "missing.db")
