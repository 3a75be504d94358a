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
