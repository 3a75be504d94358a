"""Who is speaking, by name: a speaker library and identification (docs/identity.md).

    library = parley.SpeakerLibrary("team.db")
    alice = pipeline("alice.wav", num_speakers=1)          # a clip of one speaker
    library.add("Alice", pipeline, alice, "SPEAKER_00")
    meeting = pipeline("meeting.wav")
    named = library.identify(pipeline, meeting)            # {"SPEAKER_01": NamedSpeaker(...)}
    named.relabel(meeting.turns)                           # turns with the names
    named.to_format("srt")                                 # "Alice (0.81)" cues; rttm, vtt, ...

A voiceprint records the sha256 of the pipeline's embedding model; a library holding another
model's voiceprints is refused. Several threads and processes may use one library file.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, Union

from . import _parley

if TYPE_CHECKING:
    from . import Diarization, Pipeline, Turn

DEFAULT_THRESHOLD: float = _parley.DEFAULT_IDENTIFY_THRESHOLD
"""Cosine score at or above which a speaker and a voiceprint match (not validated on real voices
here: measure yours with ``parley voiceprint evaluate``)."""


class NamedSpeaker(NamedTuple):
    name: str
    score: float       # cosine, threshold to 1
    confidence: float  # 0 to 1: the margin over the best rival decision


class Identification(dict):
    """Label (SPEAKER_xx) → :class:`NamedSpeaker` for the speakers that matched a name."""

    def __init__(self, named: dict[str, NamedSpeaker], document: str,
                 writer: Any = None) -> None:
        super().__init__(named)
        self.json: str = document
        """The result's JSON with the names as labels and an ``identification`` object."""
        self._writer = writer

    def to_format(self, format: str, exclusive: bool = False,
                  uri: Union[str, bytes, None] = None) -> str:
        """The named result as ``format`` ("rttm", "json", "txt", "srt" or "vtt", as
        ``Diarization.to_format``), each named speaker with its scores: RTTM's column 9 holds its
        confidence, txt/srt/vtt label it ``"Alice (0.81)"`` (cosine score), json is :attr:`json`.
        ``exclusive``: one speaker at a time; ``uri``: the recording's name in RTTM."""
        if self._writer is None:
            raise _parley.InvalidArgument(
                "this identification holds no result: make it with SpeakerLibrary.identify")
        from . import FORMATS, _flag, _raw_text, _text  # the same checks as Diarization.to_format

        format = _text("format", format)
        if format not in FORMATS:
            raise _parley.InvalidArgument(
                f"format must be one of {', '.join(FORMATS)} (got {format!r})")
        return self._writer.format(format, _flag("exclusive", exclusive),
                                   None if uri is None else _raw_text("uri", uri))

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

    def rename(self, old: str, new: str, merge: bool = False) -> int:
        """Renames every voiceprint of ``old`` to ``new``; returns how many (0: no such name).
        Refused when ``new`` already names voiceprints, unless ``merge`` (the two names'
        voiceprints then all belong to ``new``)."""
        return self._library.rename(old, new, bool(merge))

    def export_json(self) -> str:
        """The whole library, embeddings included, as ``parley voiceprint export`` writes it."""
        return self._library.export_json()

    def import_json(self, document: str, pipeline: "Optional[Pipeline]" = None) -> int:
        """Adds every voiceprint of an export (all or none); returns how many. With ``pipeline``,
        a voiceprint of another embedding model than the pipeline's refuses the whole document."""
        return self._library.import_json(document,
                                         pipeline._diarizer if pipeline is not None else None)

    def identify(self, pipeline: "Pipeline", diarization: "Diarization",
                 threshold: float = DEFAULT_THRESHOLD) -> Identification:
        """Names the speakers of ``diarization`` (made by ``pipeline``) that match the library:
        cosine at least ``threshold``, one name per speaker and one speaker per name (optimal
        matching)."""
        named, document, writer = self._library.identify(pipeline._diarizer, diarization._result,
                                                         float(threshold))
        return Identification({diarization.speakers[speaker]: NamedSpeaker(name, score, confidence)
                               for speaker, name, score, confidence in named}, document, writer)
