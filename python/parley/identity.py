"""Who is speaking, by name: a speaker library and identification (docs/identity.md).

    library = parley.SpeakerLibrary("team.db")
    alice = pipeline("alice.wav", num_speakers=1)          # a clip of one speaker
    library.add("Alice", pipeline, alice, "SPEAKER_00")
    meeting = pipeline("meeting.wav")
    named = library.identify(pipeline, meeting)            # {"SPEAKER_01": NamedSpeaker(...)}
    named.relabel(meeting.turns)                           # turns with the names

A voiceprint records the sha256 of the pipeline's embedding model; a library holding another
model's voiceprints is refused. Several threads and processes may use one library file.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from . import _parley

if TYPE_CHECKING:
    from . import Diarization, Pipeline, Turn

DEFAULT_THRESHOLD = 0.5
"""Cosine score at or above which a speaker and a voiceprint match (not validated on real voices
here: measure yours with ``parley voiceprint evaluate``)."""


class NamedSpeaker(NamedTuple):
    name: str
    score: float       # cosine, threshold to 1
    confidence: float  # 0 to 1: the margin over the best rival decision


class Identification(dict):
    """Label (SPEAKER_xx) → :class:`NamedSpeaker` for the speakers that matched a name."""

    def __init__(self, named: dict[str, NamedSpeaker], document: str) -> None:
        super().__init__(named)
        self.json: str = document
        """The result's JSON with the names as labels and an ``identification`` object."""

    def label(self, speaker: str) -> str:
        """The name of ``speaker`` when it matched, else ``speaker``."""
        return self[speaker].name if speaker in self else speaker

    def relabel(self, turns: list["Turn"]) -> list["Turn"]:
        """``turns`` with the matched speakers' names."""
        return [turn._replace(speaker=self.label(turn.speaker)) for turn in turns]


def _speaker_index(diarization: "Diarization", speaker: Union[str, int]) -> int:
    if isinstance(speaker, int) and not isinstance(speaker, bool):
        return speaker
    if isinstance(speaker, str) and speaker in diarization.speakers:
        return diarization.speakers.index(speaker)
    raise _parley.InvalidArgument(
        f"no speaker {speaker!r} in the result (it has {', '.join(diarization.speakers) or 'none'})")


class SpeakerLibrary:
    """Named voiceprints in one SQLite file (made when missing), as ``parley voiceprint`` keeps
    them. One thread at a time per object; open one per thread for more."""

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        self._library = _parley.Library(os.fsencode(path))

    def add(self, name: str, pipeline: "Pipeline", diarization: "Diarization",
            speaker: Union[str, int] = 0) -> int:
        """Adds the centroid of ``speaker`` (a label or row) of ``diarization``, made by
        ``pipeline``, as a voiceprint of ``name`` (one word); returns its id."""
        return self._library.add(name, pipeline._diarizer, diarization._result,
                                 _speaker_index(diarization, speaker))

    def list(self) -> list[dict[str, Any]]:
        """Every voiceprint: id, name, source, created, model_sha256, embedding_mode, dimension."""
        return json.loads(self._library.list_json())

    def names(self) -> list[str]:
        return sorted({entry["name"] for entry in self.list()})

    def remove(self, name: str) -> int:
        """Removes every voiceprint of ``name``; returns how many."""
        return self._library.remove(name)

    def identify(self, pipeline: "Pipeline", diarization: "Diarization",
                 threshold: float = DEFAULT_THRESHOLD) -> Identification:
        """Names the speakers of ``diarization`` (made by ``pipeline``) that match the library:
        cosine at least ``threshold``, one name per speaker and one speaker per name (optimal
        matching)."""
        named, document = self._library.identify(pipeline._diarizer, diarization._result,
                                                 float(threshold))
        return Identification({diarization.speakers[speaker]: NamedSpeaker(name, score, confidence)
                               for speaker, name, score, confidence in named}, document)
