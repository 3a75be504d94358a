"""parley: speaker diarization ("who spoke when") for Python.

    import parley
    pipeline = parley.Pipeline()                 # models: $PARLEY_MODELS or the per-user cache
    diarization = pipeline("meeting.wav")
    for turn in diarization.turns:
        print(f"{turn.start:.1f} {turn.end:.1f} {turn.speaker}")

A thin layer over parley's C API (libparley): the same pipeline, options and messages as the
``parley`` command. Everything that fails raises :class:`parley.Error`.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Optional, Union

from . import _parley
from ._parley import Cancelled, Error

__all__ = ["Pipeline", "Diarization", "Turn", "Segment", "Score", "Error", "Cancelled", "score",
           "__version__"]
__version__: str = _parley.version()

ProgressCallback = Callable[[float, str], Optional[bool]]
# A path, or a 1-D numpy array of samples (numpy is needed for arrays and embeddings only).
Audio = Union[str, "os.PathLike[str]", Any]


class Turn(NamedTuple):
    """One speech turn: ``speaker`` ("SPEAKER_00", ...) speaks from ``start`` to ``end`` seconds."""

    start: float
    end: float
    speaker: str


class Segment(NamedTuple):
    """A time span in seconds (what pyannote.core calls a Segment)."""

    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


class Score(NamedTuple):
    """Diarization error rate and its parts (seconds), as ``parley score`` reports them."""

    der: float
    missed: float
    false_alarm: float
    confusion: float
    total: float

    def __float__(self) -> float:
        return self.der


def _label(index: int) -> str:
    return f"SPEAKER_{index:02d}"


class Diarization:
    """The result of diarizing one recording."""

    def __init__(self, result: "_parley.Result") -> None:
        self._result = result
        self.uri: str = result.uri
        """The recording's name (its file name without extension, or "audio")."""
        self.duration: float = result.duration
        """Seconds of audio."""
        self.speakers: list[str] = [_label(i) for i in range(result.speaker_count)]
        """Speaker labels, in the order of the rows of :attr:`embeddings`."""
        self.turns: list[Turn] = self._turns(exclusive=False)
        """Speech turns, overlapping where people talk at once, in time order."""
        self.stage_times: dict[str, float] = dict(result.stage_times())
        """Seconds spent per stage (segmentation, embedding, clustering, ...)."""
        self.warnings: list[str] = result.warnings()
        """Things to know about this result (for example a speed-twin model in use)."""

    @property
    def embeddings(self) -> Any:
        """One centroid embedding per speaker: a float32 numpy array [speakers, dimension], row
        i for ``speakers[i]`` (zeros for a speaker the requested count added)."""
        return self._result.embeddings()

    def _turns(self, exclusive: bool) -> list[Turn]:
        return [Turn(start, end, _label(speaker))
                for start, end, speaker in self._result.turns(exclusive)]

    def exclusive(self) -> list[Turn]:
        """The turns with at most one speaker at a time (for aligning with transcripts)."""
        return self._turns(exclusive=True)

    def itertracks(self, yield_label: bool = False) -> Iterator[tuple]:
        """Iterates like pyannote.core's ``Annotation.itertracks``: ``(segment, track)`` or, with
        ``yield_label=True``, ``(segment, track, label)``; the track is the turn's number."""
        for track, turn in enumerate(self.turns):
            segment = Segment(turn.start, turn.end)
            yield (segment, track, turn.speaker) if yield_label else (segment, track)

    def to_rttm(self, uri: Optional[str] = None) -> str:
        """The turns as RTTM text, byte for byte what ``parley diarize`` writes; ``uri`` names
        the recording (default: :attr:`uri`)."""
        return self._result.rttm(uri)

    def to_json(self) -> str:
        """``{"diarization": [...], "exclusive_diarization": [...]}`` as ``parley diarize
        --format json`` writes it (pyannote's serialization)."""
        return self._result.json()

    def to_annotation(self) -> Any:
        """A ``pyannote.core.Annotation`` of the turns (needs pyannote.core installed)."""
        try:
            from pyannote.core import Annotation
            from pyannote.core import Segment as PyannoteSegment
        except ImportError as error:
            raise Error("to_annotation needs pyannote.core: pip install pyannote.core") from error
        annotation = Annotation(uri=self.uri)
        for segment, track, label in self.itertracks(yield_label=True):
            annotation[PyannoteSegment(segment.start, segment.end), track] = label
        return annotation

    def __repr__(self) -> str:
        return (f"<Diarization {self.uri!r}: {len(self.speakers)} speakers, "
                f"{len(self.turns)} turns, {self.duration:.1f} s>")


def _settings(models_dir: Optional[Union[str, "os.PathLike[str]"]] = None, provider: str = "auto",
              provider_options: Optional[dict[str, Any]] = None, step: float = 1.0,
              embedding_mode: str = "shared", clustering: str = "vbx",
              threads: int = 0, device_id: int = -1) -> "_parley.Settings":
    """The C API's settings for :class:`Pipeline`'s arguments (parley.distributed feeds a
    corpus engine with the same)."""
    options = [f"{key}={value}" for key, value in (provider_options or {}).items()]
    return _parley.Settings(
        models_dir=os.fspath(models_dir) if models_dir is not None else None,
        provider=provider, provider_options=options, device_id=int(device_id), step=float(step),
        embedding_mode=embedding_mode, clustering=clustering, threads=int(threads))


class Pipeline:
    """Loads the models once; call it on as many recordings as you like.

    Args:
        models_dir: folder searched for the models first; None: ``$PARLEY_MODELS``, then the
            per-user cache that ``parley models fetch`` fills.
        provider: execution provider: "auto" (a GPU where it pays off), "cpu", "cuda",
            "tensorrt", ...; a named provider that cannot be used raises :class:`Error`.
        provider_options: options passed to the provider, e.g. ``{"device_id": 1}``.
        step: seconds between 10 s analysis windows: 1 (pyannote's) or 2 (faster).
        embedding_mode: "shared" (one embedding pass over the recording, faster) or "exact".
        clustering: "vbx" (pyannote's) or "ahc".
        threads: CPU threads; 0: all cores. Results do not depend on it.

    One pipeline runs one recording at a time; use one pipeline per thread to run several at
    once (the GIL is released while parley works).
    """

    def __init__(self, models_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                 provider: str = "auto",
                 provider_options: Optional[dict[str, Any]] = None, step: float = 1.0,
                 embedding_mode: str = "shared", clustering: str = "vbx",
                 threads: int = 0) -> None:
        self._settings = _settings(models_dir, provider, provider_options, step, embedding_mode,
                                   clustering, threads)
        self._diarizer = _parley.Diarizer(self._settings)

    def __call__(self, audio: Audio, sample_rate: int = 16000,
                 num_speakers: Optional[int] = None, min_speakers: Optional[int] = None,
                 max_speakers: Optional[int] = None,
                 progress: Optional[ProgressCallback] = None) -> Diarization:
        """Diarizes ``audio``: a file path (any format parley reads, any rate and channel count)
        or a 1-D numpy array of mono samples in [-1, 1] at ``sample_rate`` Hz.

        ``progress(fraction, stage)`` is called as work advances; return True to stop (raises
        :class:`Cancelled`). An exception it raises stops the run and comes out of this call.
        """
        speakers = dict(num_speakers=num_speakers, min_speakers=min_speakers,
                        max_speakers=max_speakers, progress=progress)
        if isinstance(audio, (str, os.PathLike)):
            result = self._diarizer.diarize_file(os.fspath(audio), **speakers)
        elif hasattr(audio, "__array__"):
            import numpy as np

            samples = np.asarray(audio)
            if not np.issubdtype(samples.dtype, np.floating):
                raise Error(f"expected float samples in [-1, 1] (got dtype {samples.dtype}; for "
                            "int16 audio pass samples / 32768)")
            result = self._diarizer.diarize_samples(samples, int(sample_rate), **speakers)
        else:
            raise Error(f"expected a file path or a numpy array (got {type(audio).__name__})")
        return Diarization(result)

    def map(self, paths: Iterable[Union[str, "os.PathLike[str]"]],
            num_speakers: Optional[int] = None, min_speakers: Optional[int] = None,
            max_speakers: Optional[int] = None) -> Iterator[tuple[str, Diarization]]:
        """Diarizes many files through the corpus engine (decoding, networks and clustering in
        parallel stages) and yields ``(path, Diarization)`` as each finishes, in completion
        order. A file that fails raises :class:`Error` naming it when its turn comes. Loads its
        own copy of the models."""
        paths = [os.fspath(path) for path in paths]
        batch = _parley.Batch(self._settings)
        for path in paths:
            batch.submit_file(path, num_speakers, min_speakers, max_speakers)
        batch.finish()
        while (item := batch.next()) is not None:
            index, outcome = item
            if isinstance(outcome, str):
                raise Error(outcome)
            yield paths[index], Diarization(outcome)


def _rttm_text(value: Union[Diarization, str, "os.PathLike[str]"], uri: Optional[str]) -> str:
    if isinstance(value, Diarization):
        return value.to_rttm(uri)
    text = os.fspath(value)
    if "\n" not in text and os.path.isfile(text):
        with open(text, encoding="utf-8") as file:
            return file.read()
    return text


def _single_uri(rttm: str) -> Optional[str]:
    uris = {line.split()[1] for line in rttm.splitlines() if line.startswith("SPEAKER ")}
    return uris.pop() if len(uris) == 1 else None


def score(reference: Union[Diarization, str, "os.PathLike[str]"],
          hypothesis: Union[Diarization, str, "os.PathLike[str]"], collar: float = 0.0,
          skip_overlap: bool = False) -> Score:
    """Diarization error rate of ``hypothesis`` against ``reference`` (md-eval's definition).

    Each side is a :class:`Diarization`, an RTTM file path or RTTM text. A Diarization scored
    against single-recording RTTM takes that recording's name. ``collar``: seconds left unscored
    on each side of every reference boundary (md-eval's -c; pyannote.metrics' collar is twice
    this); ``skip_overlap``: leave overlapped reference speech unscored.
    """
    reference_text = _rttm_text(reference, None)
    hypothesis_text = _rttm_text(hypothesis, _single_uri(reference_text))
    if isinstance(reference, Diarization):
        reference_text = reference.to_rttm(_single_uri(hypothesis_text))
    return Score(*_parley.score_rttm(reference_text, hypothesis_text, float(collar),
                                     bool(skip_overlap)))
