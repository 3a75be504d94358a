"""parley: speaker diarization ("who spoke when") for Python.

    import parley
    pipeline = parley.Pipeline()                 # models: docs/models.md, "Where models are found"
    diarization = pipeline("meeting.wav")
    for turn in diarization.turns:
        print(f"{turn.start:.1f} {turn.end:.1f} {turn.speaker}")

A thin layer over parley's C API (libparley): the same pipeline, options and messages as the
``parley`` command. Everything that fails raises :class:`parley.Error`: a wrong argument
:class:`parley.InvalidArgument` (also a ValueError) or :class:`parley.ArgumentTypeError` (also
a TypeError).
"""
from __future__ import annotations

import json
import math
import numbers
import os
import threading
import warnings
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Optional, Union

from . import _parley
from ._parley import Cancelled, Error, InvalidArgument

__all__ = ["Pipeline", "Diarization", "Annotation", "Turn", "Segment", "Score", "Error",
           "Cancelled", "InvalidArgument", "ArgumentTypeError", "SpeedTwinWarning", "FORMATS",
           "DEFAULT_FORMAT",
           "options", "score", "__version__", "SpeakerLibrary", "Identification", "NamedSpeaker",
           "Stream", "StreamEvent"]
__version__: str = _parley.version()


class ArgumentTypeError(Error, TypeError):
    """An argument of a type parley cannot take; the message names it and what it takes."""


class SpeedTwinWarning(UserWarning):
    """The speaker-embedding model is the speed twin (random weights): timing is real, speaker
    labels are meaningless. Raised once per :class:`Pipeline`."""


# The bounds of the C API (include/parley/parley.h), checked here first so that any Python value
# gets a parley error rather than a conversion error. A speaker count's own bound is the engine's
# (its message comes through the C API).
MIN_SAMPLE_RATE: int = _parley.MIN_SAMPLE_RATE
MAX_SAMPLE_RATE: int = _parley.MAX_SAMPLE_RATE
MAX_STREAM_CHANNELS: int = _parley.MAX_STREAM_CHANNELS
_INT_MAX = 2**31 - 1


def _integer(name: str, value: Any, low: int, high: int) -> int:
    """`value` as an int in [low, high]: ints (numpy's too) and floats without a fraction."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, numbers.Real)):
        raise ArgumentTypeError(f"{name} must be an integer (got {type(value).__name__})")
    if not isinstance(value, numbers.Integral):
        number = _float(name, value)
        if not (math.isfinite(number) and number.is_integer()):
            raise InvalidArgument(f"{name} must be a whole number (got {value!r})")
        value = int(number)
    value = int(value)
    if not low <= value <= high:
        # The option table's wording (pipeline/option_table.h), as the C API's messages.
        raise InvalidArgument(f"{name}: must be {low} to {high} (got {value})")
    return value


def _float(name: str, value: Any) -> float:
    try:
        return float(value)
    except (OverflowError, ValueError):
        raise InvalidArgument(f"{name} is out of range (got {value!r})") from None


def _speakers(name: str, value: Any) -> Optional[int]:
    return None if value is None else _integer(name, value, 1, _INT_MAX)


def _real(name: str, value: Any) -> float:
    """`value` as a float, of any size: bounds are the caller's (or the library's) to check."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a number (got {type(value).__name__})")
    return _float(name, value)


def _number(name: str, value: Any, low: float, high: float) -> float:
    """`value` as a finite float in [low, high]."""
    number = _real(name, value)
    if not (math.isfinite(number) and low <= number <= high):
        raise InvalidArgument(f"{name} must be a number from {low:g} to {high:g} (got {value!r})")
    return number


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):  # bool, numpy.bool_ too
        return bool(value)
    if type(value).__name__ in ("bool_", "bool"):  # numpy's bool is not Integral
        return bool(value)
    raise ArgumentTypeError(f"{name} must be True or False (got {value!r})")


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a string (got {type(value).__name__})")
    if "\0" in value:
        raise InvalidArgument(f"{name} holds a NUL character: {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{name} is not valid Unicode text: {value!r}") from None
    return value


def _raw_text(name: str, value: Any) -> bytes:
    """Text that may carry a file name's bytes (as os.fsdecode keeps them), as those bytes."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a string (got {type(value).__name__})")
    if "\0" in value:
        raise InvalidArgument(f"{name} holds a NUL character: {value!r}")
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{name} is not valid Unicode text: {value!r}") from None


def _path(name: str, value: Any) -> bytes:
    """A path as the bytes the C API takes: any file name, UTF-8 or not."""
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise ArgumentTypeError(f"{name} must be a path: str, bytes or os.PathLike "
                                f"(got {type(value).__name__})")
    try:
        path = os.fsencode(value)
    except UnicodeEncodeError:
        raise InvalidArgument(f"{name} is not valid Unicode text: {value!r}") from None
    except TypeError as error:  # an os.PathLike whose __fspath__ returns something else
        raise ArgumentTypeError(f"{name}: {error}") from None
    if b"\0" in path:
        raise InvalidArgument(f"{name} holds a NUL character, which no file name can: {value!r}")
    if not path:
        raise InvalidArgument(f"{name} is empty; pass a file name")
    return path


def _identify_threshold(value: Any) -> float:
    """The identify_threshold keyword within the option table's bounds, in the table's words."""
    option = next(option for option in options() if option["name"] == "identify_threshold")
    low, high = option["minimum"], option["maximum"]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"identify_threshold must be a number "
                                f"(got {type(value).__name__})")
    number = _float("identify_threshold", value)
    if not (math.isfinite(number) and low <= number <= high):
        raise InvalidArgument(f"identify_threshold: must be {low:g} to {high:g} (got {value!r})")
    return number


def _progress(value: Any, name: str = "progress") -> Any:
    if value is not None and not callable(value):
        raise ArgumentTypeError(f"{name} must be a callable or None "
                                f"(got {type(value).__name__})")
    return value


ProgressCallback = Callable[[float, str], Optional[bool]]
# pyannote.audio's hook: hook(step_name, step_artifact, file=None, total=None, completed=None),
# what pyannote.audio.pipelines.utils.hook.ProgressHook is called with.
Hook = Callable[..., Any]

# parley's stage names as pyannote's hook names its steps.
_HOOK_STEPS = {"embedding": "embeddings", "segmentation+embedding": "segmentation+embeddings"}
# Steps a hook sees per stage: fractions are reported as completed out of this many.
_HOOK_TOTAL = 100


def _with_hook(progress: Optional[ProgressCallback], hook: Optional[Hook],
               file: dict) -> Optional[ProgressCallback]:
    """One progress callable for the C API that calls `progress` and a pyannote-shaped `hook`:
    the hook gets each stage as a step (no artifact: parley does not hand out its
    intermediates), its fraction as ``completed`` of ``total``."""
    if hook is None:
        return progress

    def both(fraction: float, stage: str) -> Optional[bool]:
        hook(_HOOK_STEPS.get(stage, stage), None, file=file, total=_HOOK_TOTAL,
             completed=round(fraction * _HOOK_TOTAL))
        return progress(fraction, stage) if progress is not None else None

    return both
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


class Annotation:
    """Speech turns read the way pyannote's ``Annotation`` reads: iterating gives ``(segment,
    speaker)`` (as ``for turn, speaker in output.speaker_diarization``), ``itertracks`` gives
    ``(segment, track[, label])``; :meth:`to_annotation` makes a real one."""

    def __init__(self, uri: str, turns: list[Turn]) -> None:
        self.uri = uri
        self.turns = turns

    def __iter__(self) -> Iterator[tuple[Segment, str]]:
        for turn in self.turns:
            yield Segment(turn.start, turn.end), turn.speaker

    def __len__(self) -> int:
        return len(self.turns)

    def labels(self) -> list[str]:
        """The speakers who have a turn, sorted."""
        return sorted({turn.speaker for turn in self.turns})

    def itertracks(self, yield_label: bool = False) -> Iterator[tuple]:
        for track, turn in enumerate(self.turns):
            segment = Segment(turn.start, turn.end)
            yield (segment, track, turn.speaker) if yield_label else (segment, track)

    def to_annotation(self) -> Any:
        """A ``pyannote.core.Annotation`` of the turns (needs pyannote.core installed)."""
        try:
            from pyannote.core import Annotation as PyannoteAnnotation
            from pyannote.core import Segment as PyannoteSegment
        except ImportError as error:
            raise Error("to_annotation needs pyannote.core: pip install pyannote.core") from error
        annotation = PyannoteAnnotation(uri=self.uri)
        for segment, track, label in self.itertracks(yield_label=True):
            annotation[PyannoteSegment(segment.start, segment.end), track] = label
        return annotation

    def __repr__(self) -> str:
        return f"<Annotation {self.uri!r}: {len(self.turns)} turns>"


class _TurnList(list):
    """A list of turns that may also be called, as ``exclusive`` was a method (``exclusive()``
    still gives the same list)."""

    def __call__(self) -> "_TurnList":
        return self


# The option table's format choices (parley.options()), as every face offers them.
_FORMAT_OPTION = next(option for option in json.loads(_parley.options_json())
                      if option["name"] == "format")
FORMATS: tuple[str, ...] = tuple(_FORMAT_OPTION["choices"])
"""What :meth:`Diarization.to_format` writes, as ``parley diarize --format`` does."""
DEFAULT_FORMAT: str = _FORMAT_OPTION["default"]
"""The format a result is written in when none is asked for (the table's default)."""


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
        self.exclusive: list[Turn] = _TurnList(self._turns(exclusive=True))
        """The turns with at most one speaker at a time (for aligning with transcripts)."""
        self.stage_times: dict[str, float] = dict(result.stage_times())
        """Seconds spent per stage (segmentation, embedding, clustering, ...)."""
        self.warnings: list[str] = result.warnings()
        """Things to know about this result (for example a speed-twin model in use)."""
        self.speed_twin: bool = result.speed_twin
        """True when the speed twin (random weights) made the speaker embeddings: the turns'
        timing is real, their speaker labels are meaningless."""
        self.identification: Optional["Identification"] = None
        """The speakers a :class:`Pipeline` made with ``voiceprints=`` named (its
        :meth:`Identification.relabel` and :meth:`Identification.to_format` give the turns
        with the names); None without a library."""

    @property
    def embeddings(self) -> Any:
        """One centroid embedding per speaker: a float32 numpy array [speakers, dimension], row
        i for ``speakers[i]`` (zeros for a speaker the requested count added)."""
        return self._result.embeddings()

    # pyannote.audio's DiarizeOutput names.
    @property
    def speaker_diarization(self) -> Annotation:
        """The turns as pyannote's ``output.speaker_diarization`` reads: ``for turn, speaker in
        output.speaker_diarization``."""
        return Annotation(self.uri, self.turns)

    @property
    def exclusive_speaker_diarization(self) -> Annotation:
        """The exclusive turns (:attr:`exclusive`) as pyannote's
        ``output.exclusive_speaker_diarization``."""
        return Annotation(self.uri, list(self.exclusive))

    @property
    def speaker_embeddings(self) -> Any:
        """:attr:`embeddings`, as pyannote's ``output.speaker_embeddings`` (row i for
        ``speakers[i]``)."""
        return self.embeddings

    def _turns(self, exclusive: bool) -> list[Turn]:
        return [Turn(start, end, _label(speaker))
                for start, end, speaker in self._result.turns(exclusive)]

    def itertracks(self, yield_label: bool = False) -> Iterator[tuple]:
        """Iterates like pyannote.core's ``Annotation.itertracks``: ``(segment, track)`` or, with
        ``yield_label=True``, ``(segment, track, label)``; the track is the turn's number."""
        for track, turn in enumerate(self.turns):
            segment = Segment(turn.start, turn.end)
            yield (segment, track, turn.speaker) if yield_label else (segment, track)

    def to_rttm(self, uri: Optional[str] = None) -> str:
        """The turns as RTTM text, byte for byte what ``parley diarize`` writes; ``uri`` names
        the recording (default: :attr:`uri`; no whitespace)."""
        return self._result.rttm(None if uri is None else _raw_text("uri", uri))

    def to_json(self) -> str:
        """``{"diarization": [...], "exclusive_diarization": [...], "speaker_embeddings": {...}}``
        as ``parley diarize --format json`` writes it (pyannote's serialization)."""
        return self._result.json()

    def to_format(self, format: str, exclusive: bool = False, uri: Optional[str] = None) -> str:
        """The result in ``format`` (one of :data:`FORMATS`: rttm, json, txt, srt, vtt), byte for
        byte what ``parley diarize --format FORMAT [--exclusive]`` writes. ``exclusive``: the
        one-speaker-at-a-time turns (json holds both); ``uri`` names the recording in rttm."""
        format = _text("format", format)
        if format not in FORMATS:
            raise InvalidArgument(f"format must be one of {', '.join(FORMATS)} (got {format!r})")
        return self._result.format(format, _flag("exclusive", exclusive),
                                   None if uri is None else _raw_text("uri", uri))

    def write(self, path: Union[str, "os.PathLike[str]"], format: Optional[str] = None,
              exclusive: bool = False) -> None:
        """Writes :meth:`to_format` to ``path`` as ``parley diarize`` writes its outputs: whole
        or not at all (a temporary file renamed over it), a read-only file refused (parley.Error
        says why, as for any file that cannot be written); ``format`` defaults to the file's
        extension (``.rttm``, ``.json``, ...)."""
        raw = _path("path", path)
        target = os.fsdecode(raw)
        if format is None:
            format = os.path.splitext(target)[1].lstrip(".").lower()
            if format not in FORMATS:
                raise InvalidArgument(f"cannot tell the format from {target!r}: pass format= "
                                      f"({', '.join(FORMATS)})")
        text = self.to_format(format, exclusive)
        # The text's bytes as the engine made them (a name's bytes kept by surrogateescape).
        _parley.write_file(raw, text.encode("utf-8", "surrogateescape"))

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


def _option_text(option: dict[str, Any], value: Any) -> bytes:
    """`value` of a table option (parley.options()) as the text the C API parses: Python checks
    the type, the engine the value (its bounds, choices and message are every face's)."""
    name, kind = option["name"], option["type"]
    if kind == "flag":
        if ((isinstance(value, numbers.Integral) and int(value) in (0, 1))
                or type(value).__name__ in ("bool_", "bool")):  # numpy's bool is not Integral
            return b"true" if bool(value) else b"false"
        raise ArgumentTypeError(f"{name} must be True or False (got {value!r})")
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            word = "an integer" if kind == "integer" else "a number"
            raise ArgumentTypeError(f"{name} must be {word} (got {type(value).__name__})")
        if isinstance(value, numbers.Integral):
            return str(int(value)).encode()
        number = _float(name, value)
        # A whole number as the command line writes it ("11", not "11.0"): the same message.
        if math.isfinite(number) and number.is_integer() and abs(number) < 2**53:
            return str(int(number)).encode()
        return repr(number).encode()
    if kind == "path":
        return _path(name, value)
    return _text(name, value).encode("utf-8")


def _settings(**values: Any) -> "_parley.Settings":
    """The C API's named options for :class:`Pipeline`'s arguments (parley.distributed feeds a
    corpus engine with the same), by the option table's names. None: the default, for the
    options whose default is none."""
    table = {option["name"]: option for option in options() if option["faces"]["python"]}
    settings = _parley.Settings()
    for name, value in values.items():
        option = table.get(name)
        if option is None:
            raise ArgumentTypeError(f"no option {name!r}; expected some of {', '.join(table)}")
        if value is None and option["default"] is None:
            continue
        if name == "provider_options":
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ArgumentTypeError(f"provider_options must be a dict (got "
                                        f"{type(value).__name__})")
            for key, item in value.items():
                key = _text("a provider_options key", key)
                if "=" in key or not key:
                    raise InvalidArgument(f"provider_options key {key!r} is empty or holds '='")
                if isinstance(item, bool) or not isinstance(item, (str, numbers.Real)):
                    raise ArgumentTypeError(f"provider_options[{key!r}] must be a string or a "
                                            f"number (got {type(item).__name__})")
                text = _text(f"provider_options[{key!r}]", str(item))
                settings.set(name, f"{key}={text}".encode("utf-8"))
            continue
        if value is None:
            raise ArgumentTypeError(f"{name} must be a {option['type']} (got None)")
        settings.set(name, _option_text(option, value))
    return settings


class Pipeline:
    """Loads the models once; call it on as many recordings as you like.

    Args:
        models_dir: folder searched for the models first; None: ``$PARLEY_MODELS``, then the
            per-user cache that ``parley models fetch`` fills, then the models of the build tree
            the package was built in (build/models) or of an install (share/parley/models).
        provider: execution provider: "auto" (a GPU where it pays off), "cpu", "cuda",
            "tensorrt", ...; a named provider that cannot be used raises :class:`Error`.
        provider_options: options passed to the provider, e.g. ``{"device_id": 1}``.
        step: seconds between 10 s analysis windows: 1 (pyannote's) or 2 (faster).
        embedding_mode: "shared" (one embedding pass over the recording, faster) or "exact".
        clustering: "vbx" (pyannote's) or "ahc".
        threads: CPU threads; 0: all cores. Results do not depend on it.
        device_id: the accelerator to run on (CUDA device number, ...); -1: the provider's
            default. The same as ``provider_options={"device_id": N}``.
        embedding_features: where the shared mode computes fbank features: "auto", "host" or
            "graph" (``parley diarize --embedding-features``).
        devices, engines, jobs: how :meth:`map` lays out its corpus engine, as ``parley diarize
            --devices --engines --jobs``: GPUs ("0,1" or "all"; None: the configured one), model
            sets per device (None: automatic), recordings decoded and clustered at once.
        segmentation_model, embedding_model, plda_dir: model files, each found through
            ``models_dir`` when None.
        ahc_threshold: the AHC distance threshold (``clustering="ahc"`` only; None: 0.60, 0.65
            for long recordings).
        segmentation_provider, embedding_provider: one model's provider (overrides
            ``provider`` for it); force_gpu, force_cpu: every model on the GPU provider (fail
            without one) or on the CPU.
        embedding_batch, segmentation_batch, segmentation_sessions: chunks per embedding call
            (exact mode), per segmentation call and segmentation calls feeding a GPU at once
            (None: automatic).
        gpu_float16: the models in float16 on a CUDA/ROCm GPU (not exact); sincnet_per_chunk:
            segmentation's first convolution per chunk, as pyannote (slower, the same within
            rounding); no_streaming: segment the whole recording before embedding (same
            output); cuda_graph: "on" replays the embedding network as CUDA graphs.
        voiceprints: a speaker library (:class:`SpeakerLibrary`'s file): every result's
            :attr:`Diarization.identification` names the speakers that match it with a cosine
            score of at least ``identify_threshold`` (as :meth:`SpeakerLibrary.identify`).
        progress: ``progress(fraction, stage)`` for every call (a call's own ``progress=``
            replaces it).
        hook: a pyannote.audio hook for every call (a call's own ``hook=`` replaces it), e.g.
            ``pyannote.audio.pipelines.utils.hook.ProgressHook()``.

    The options, their defaults and bounds are those of every face of parley (the option table,
    ``parley options``): a value out of bounds raises :class:`InvalidArgument` with the message
    the command line and the C API give.

    One pipeline runs one recording at a time: calls from several threads take turns. Use one
    pipeline per thread to run several at once (the GIL is released while parley works).

    When the speaker-embedding model is the speed twin (random weights), the pipeline warns once
    (:class:`SpeedTwinWarning`) and every result says so (:attr:`Diarization.speed_twin`).
    """

    def __init__(self, models_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                 provider: str = "auto",
                 provider_options: Optional[dict[str, Any]] = None, step: float = 1.0,
                 embedding_mode: str = "shared", clustering: str = "vbx",
                 threads: int = 0, device_id: int = -1, *,
                 progress: Optional[ProgressCallback] = None,
                 hook: Optional[Hook] = None, embedding_features: str = "auto",
                 devices: Optional[str] = None, engines: Optional[int] = None,
                 jobs: int = 2,
                 segmentation_model: Optional[Union[str, "os.PathLike[str]"]] = None,
                 embedding_model: Optional[Union[str, "os.PathLike[str]"]] = None,
                 plda_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                 ahc_threshold: Optional[float] = None,
                 segmentation_provider: Optional[str] = None,
                 embedding_provider: Optional[str] = None, force_gpu: bool = False,
                 force_cpu: bool = False, embedding_batch: int = 32,
                 segmentation_batch: Optional[int] = None,
                 segmentation_sessions: Optional[int] = None, gpu_float16: bool = False,
                 sincnet_per_chunk: bool = False, no_streaming: bool = False,
                 cuda_graph: str = "off",
                 voiceprints: Optional[Union[str, "os.PathLike[str]"]] = None,
                 identify_threshold: float = 0.5) -> None:
        self._settings = _settings(
            models_dir=models_dir, provider=provider, provider_options=provider_options,
            step=step, embedding_mode=embedding_mode, clustering=clustering, threads=threads,
            device_id=device_id, embedding_features=embedding_features, devices=devices,
            engines=engines, jobs=jobs, segmentation_model=segmentation_model,
            embedding_model=embedding_model, plda_dir=plda_dir, ahc_threshold=ahc_threshold,
            segmentation_provider=segmentation_provider, embedding_provider=embedding_provider,
            force_gpu=force_gpu, force_cpu=force_cpu, embedding_batch=embedding_batch,
            segmentation_batch=segmentation_batch, segmentation_sessions=segmentation_sessions,
            gpu_float16=gpu_float16, sincnet_per_chunk=sincnet_per_chunk,
            no_streaming=no_streaming, cuda_graph=cuda_graph)
        self._progress = _progress(progress)
        self._hook = _progress(hook, "hook")
        # The identity options name speakers through a library of this pipeline's own, as
        # SpeakerLibrary.identify does; checked before the models load.
        self._identify_threshold = _identify_threshold(identify_threshold)
        self._library = None
        if voiceprints is not None:
            from .identity import SpeakerLibrary

            library = os.fsdecode(_path("voiceprints", voiceprints))
            if not os.path.isfile(library):
                # As the command line's --voiceprints: a mistyped path names no speaker silently.
                raise InvalidArgument(f"voiceprints: no speaker library {library!r} (make one "
                                      "with SpeakerLibrary(path).add or parley voiceprint add)")
            self._library = SpeakerLibrary(library)
        # The library handle is one thread's at a time; calls from several threads take turns.
        self._library_lock = threading.Lock()
        self._diarizer = _parley.Diarizer(self._settings)
        if self._diarizer.speed_twin:
            for message in self._diarizer.warnings():
                warnings.warn(message, SpeedTwinWarning, stacklevel=2)

    def _named(self, diarization: "Diarization") -> "Diarization":
        """`diarization` with its :attr:`Diarization.identification` when the pipeline has a
        speaker library."""
        if self._library is not None:
            with self._library_lock:
                diarization.identification = self._library.identify(
                    self, diarization, self._identify_threshold)
        return diarization

    def __call__(self, audio: Audio, sample_rate: int = 16000,
                 num_speakers: Optional[int] = None, min_speakers: Optional[int] = None,
                 max_speakers: Optional[int] = None,
                 progress: Optional[ProgressCallback] = None,
                 hook: Optional[Hook] = None) -> Diarization:
        """Diarizes ``audio``: a file path (any format parley reads, any rate and channel count)
        or a 1-D numpy array of mono samples in [-1, 1] at ``sample_rate`` Hz.

        ``progress(fraction, stage)`` is called as work advances (each stage from 0 to 1, no
        fraction twice); return True to stop (raises :class:`Cancelled`). An exception it raises
        stops the run and comes out of this call; so does Ctrl-C (KeyboardInterrupt).

        ``hook`` is pyannote.audio's: called ``hook(step_name, step_artifact, file=file,
        total=total, completed=completed)`` as each stage advances ("segmentation",
        "embeddings", "clustering"; no artifact, ``completed`` of ``total`` = 100), so that
        ``with ProgressHook() as hook: pipeline(audio, hook=hook)`` works as with pyannote.
        """
        progress = _progress(progress) if progress is not None else self._progress
        hook = _progress(hook, "hook") if hook is not None else self._hook
        is_path = isinstance(audio, (str, bytes, os.PathLike))
        file = {"audio": audio if is_path else "<samples>"}
        speakers = dict(num_speakers=_speakers("num_speakers", num_speakers),
                        min_speakers=_speakers("min_speakers", min_speakers),
                        max_speakers=_speakers("max_speakers", max_speakers),
                        progress=_with_hook(progress, hook, file))
        rate = _integer("sample_rate", sample_rate, MIN_SAMPLE_RATE, MAX_SAMPLE_RATE)
        if is_path:
            result = self._diarizer.diarize_file(_path("audio", audio), **speakers)
        elif hasattr(audio, "__array__"):
            import numpy as np

            try:
                samples = np.asarray(audio)
            except (TypeError, ValueError) as error:
                raise InvalidArgument(f"audio cannot be read as a numpy array: {error}") from None
            if not np.issubdtype(samples.dtype, np.floating):
                raise InvalidArgument(f"expected float samples in [-1, 1] (got dtype "
                                      f"{samples.dtype}; for int16 audio pass samples / 32768)")
            result = self._diarizer.diarize_samples(samples, rate, **speakers)
        else:
            raise ArgumentTypeError(f"expected a file path or a numpy array "
                                    f"(got {type(audio).__name__})")
        return self._named(Diarization(result))

    def map(self, paths: Iterable[Union[str, bytes, "os.PathLike[str]"]],
            num_speakers: Optional[int] = None, min_speakers: Optional[int] = None,
            max_speakers: Optional[int] = None,
            errors: str = "raise") -> Iterator[tuple[Any, Union[Diarization, Error]]]:
        """Diarizes many files through the corpus engine (decoding, networks and clustering in
        parallel stages) and yields ``(path, Diarization)`` as each finishes, in completion
        order. Loads its own copy of the models, laid out as the pipeline's ``devices``,
        ``engines`` and ``jobs`` ask.

        A file that fails fails alone: the others are diarized and yielded all the same. With
        ``errors="raise"`` (the default), once every other file was yielded, an :class:`Error`
        names each file that failed and why (its ``failures`` attribute: a list of ``(path,
        Error)``). With ``errors="yield"``, a failed file comes out in its turn as ``(path,
        Error)``, and nothing is raised.

        Leaving the loop early (``break``, Ctrl-C, which the wait sees within 0.1 s) drops the
        files not yet done: those not started at once, those in the networks at their next step.
        """
        if errors not in ("raise", "yield"):
            raise InvalidArgument(f"errors must be 'raise' or 'yield' (got {errors!r})")
        if isinstance(paths, (str, bytes, os.PathLike)):
            raise ArgumentTypeError("map takes a list of paths; for one file call the pipeline")
        try:
            paths = list(paths)
        except TypeError:
            raise ArgumentTypeError(f"map takes an iterable of paths "
                                    f"(got {type(paths).__name__})") from None
        encoded = [_path("each path", path) for path in paths]
        speakers = (_speakers("num_speakers", num_speakers),
                    _speakers("min_speakers", min_speakers),
                    _speakers("max_speakers", max_speakers))
        return self._map(paths, encoded, speakers, errors)

    def _map(self, paths: list, encoded: list[bytes], speakers: tuple,
             errors: str) -> Iterator[tuple[Any, Union[Diarization, Error]]]:
        batch = _parley.Batch(self._settings)
        for path in encoded:
            batch.submit_file(path, *speakers)
        batch.finish()
        failures: list[tuple[Any, Error]] = []
        while (item := batch.next()) is not None:
            index, outcome = item
            if isinstance(outcome, str):
                if errors == "yield":
                    yield paths[index], Error(outcome)
                else:
                    failures.append((paths[index], Error(outcome)))
                continue
            yield paths[index], self._named(Diarization(outcome))
        if failures:
            error = Error(f"{len(failures)} of {len(paths)} recordings failed: "
                          + "; ".join(str(failure) for _, failure in failures))
            error.failures = failures  # type: ignore[attr-defined]
            raise error


def options() -> list[dict[str, Any]]:
    """Every diarization option of every face of parley (name, type, default, bounds, help, and
    which faces offer it), the one table the CLI, the server, the C API and this package follow."""
    return json.loads(_parley.options_json())


def _looks_like_rttm(text: str) -> bool:
    return "\n" in text or text.lstrip().startswith(("SPEAKER ", "SPEAKER\t", ";;"))


def _rttm_text(name: str, value: Union[Diarization, str, bytes, "os.PathLike[str]"],
               uri: Optional[str]) -> str:
    """RTTM text of a Diarization, RTTM text itself (several lines, or one SPEAKER line), or
    the contents of the RTTM file a path names."""
    if isinstance(value, Diarization):
        return value.to_rttm(uri)
    if isinstance(value, str) and _looks_like_rttm(value):
        return value
    path = _path(name, value)
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as file:
            return file.read()
    except FileNotFoundError:
        raise Error(f"{name}: no such RTTM file {os.fsdecode(path)!r} (pass a Diarization, an "
                    "RTTM file's path or RTTM text)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise Error(f"{name}: cannot read the RTTM file {os.fsdecode(path)!r}: {error}") from None


def _single_uri(rttm: str) -> Optional[str]:
    uris = {fields[1] for fields in (line.split() for line in rttm.splitlines())
            if len(fields) > 1 and fields[0] == "SPEAKER"}
    return uris.pop() if len(uris) == 1 else None


def score(reference: Union[Diarization, str, "os.PathLike[str]"],
          hypothesis: Union[Diarization, str, "os.PathLike[str]"], collar: float = 0.0,
          skip_overlap: bool = False) -> Score:
    """Diarization error rate of ``hypothesis`` against ``reference`` (md-eval's definition).

    Each side is a :class:`Diarization`, an RTTM file path or RTTM text (a string of several
    lines, or one starting with ``SPEAKER``; any other string is a path, and a missing file is
    an :class:`Error` naming it). A Diarization scored
    against single-recording RTTM takes that recording's name. ``collar``: seconds left unscored
    on each side of every reference boundary (md-eval's -c; pyannote.metrics' collar is twice
    this); ``skip_overlap``: leave overlapped reference speech unscored.
    """
    collar = _real("collar", collar)  # its bounds are the library's (parley_score_rttm)
    skip_overlap = _flag("skip_overlap", skip_overlap)
    reference_text = _rttm_text("reference", reference, None)
    hypothesis_text = _rttm_text("hypothesis", hypothesis, _single_uri(reference_text))
    if isinstance(reference, Diarization):
        reference_text = reference.to_rttm(_single_uri(hypothesis_text))
    return Score(*_parley.score_rttm(_raw_text("reference", reference_text),
                                     _raw_text("hypothesis", hypothesis_text), collar,
                                     skip_overlap))


# Who is speaking, by name (parley/identity.py); imported last, as it refers to the classes above.
from .identity import Identification, NamedSpeaker, SpeakerLibrary  # noqa: E402
# Live diarization (parley/stream.py).
from .stream import Stream, StreamEvent  # noqa: E402
