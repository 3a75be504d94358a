"""Live diarization: :class:`Stream` (docs/live.md).

    import parley
    pipeline = parley.Pipeline()
    with parley.Stream(pipeline, sample_rate=16000, latency=2.0) as stream:
        for chunk in microphone_chunks():          # numpy float32/int16 arrays or s16le bytes
            stream.push(chunk)
            for event in stream.events():
                print(event.type, event.speaker, event.start, event.end)
    diarization = stream.result                     # the whole stream, as Pipeline returns it
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

from . import _parley

_KINDS = ("turn_start", "turn_update", "turn_end")


class StreamEvent(NamedTuple):
    """One event of a stream. ``type``: "turn_start" (final), "turn_update" (provisional, only
    with ``provisional=True``) or "turn_end" (final); times in seconds from the stream's first
    sample; ``audio_time``: seconds of audio processed when it was made; ``latency``: wall
    seconds from the audio's arrival (when it was pushed) to the event, the compute of the
    step that made it included. ``speaker`` is None in a "turn_update" of a voice not named
    yet (a name is given at its first final "turn_start")."""
    type: str
    speaker: Optional[str]
    start: float
    end: float
    audio_time: float
    latency: float

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


class Stream:
    """Diarizes audio as it arrives, on a :class:`parley.Pipeline`'s models (any number of
    streams may share one pipeline, from any threads; do not diarize recordings with that
    pipeline while its streams run).

    Args:
        pipeline: the :class:`parley.Pipeline` whose models the stream runs.
        sample_rate: Hz of the pushed samples (resampled to 16 kHz inside).
        channels: interleaved channels of the pushed samples (averaged to mono; 1 to
            ``parley.MAX_STREAM_CHANNELS``).
        step: seconds the 10 s window moves between two model runs.
        latency: seconds of audio after which a frame's speaker is final (0.5 to 5).
        max_speakers: most speakers the stream creates.

    The bounds and defaults are the stream's option table's (``parley options --stream``), which
    the library checks: a value out of them raises :class:`parley.InvalidArgument` naming it.
        match_threshold: cosine distance under which a voice matches a known speaker.
        provisional: also report "turn_update" events for the frames not final yet.
        final_recluster: at the end, diarize the whole stream as the pipeline does and return
            that, under the live speaker names.
    """

    def __init__(self, pipeline: Any, sample_rate: int = 16000, channels: int = 1,
                 step: float = 0.5, latency: float = 2.0, max_speakers: int = 20,
                 match_threshold: float = 0.7, provisional: bool = False,
                 final_recluster: bool = False) -> None:
        from . import _INT_MAX, Pipeline, _flag, _float, _integer

        if not isinstance(pipeline, Pipeline):
            from . import ArgumentTypeError

            raise ArgumentTypeError(f"Stream runs on a parley.Pipeline "
                                    f"(got {type(pipeline).__name__})")
        # Bounds here only where a value must fit a C int; the rest are the library's.
        self._channels = _integer("channels", channels, 1, _parley.MAX_STREAM_CHANNELS)
        self._stream = _parley.Stream(
            pipeline._diarizer, sample_rate=_float("sample_rate", sample_rate),
            step=_float("step", step), latency=_float("latency", latency),
            max_speakers=_integer("max_speakers", max_speakers, -_INT_MAX - 1, _INT_MAX),
            match_threshold=_float("match_threshold", match_threshold),
            provisional=_flag("provisional", provisional),
            final_recluster=_flag("final_recluster", final_recluster))
        self.result: Optional[Any] = None

    def push(self, samples: Any) -> None:
        """Adds audio: a numpy array (float in [-1, 1], or int16), interleaved when the stream
        has several channels, or ``bytes`` of signed 16-bit little-endian PCM. Any length."""
        import numpy as np

        from . import ArgumentTypeError, InvalidArgument

        if self.result is not None:
            raise InvalidArgument("the stream is finished; start a new Stream")
        if isinstance(samples, (bytes, bytearray, memoryview)):
            data = bytes(samples)
            if len(data) % (2 * self._channels) != 0:
                raise InvalidArgument(f"{len(data)} bytes are not whole 16-bit frames of "
                                      f"{self._channels} channel(s)")
            self._stream.push_s16(np.frombuffer(data, dtype="<i2"), self._channels)
            return
        if not hasattr(samples, "__array__"):
            raise ArgumentTypeError(f"push takes a numpy array or bytes "
                                    f"(got {type(samples).__name__})")
        array = np.asarray(samples).reshape(-1)
        if array.size % self._channels != 0:
            raise InvalidArgument(f"{array.size} samples are not whole frames of "
                                  f"{self._channels} channels")
        if array.dtype == np.int16:
            self._stream.push_s16(array, self._channels)
        elif np.issubdtype(array.dtype, np.floating):
            self._stream.push_float(array, self._channels)
        else:
            raise InvalidArgument(f"expected float samples in [-1, 1] or int16 "
                                  f"(got dtype {array.dtype})")

    def events(self) -> list[StreamEvent]:
        """The events made since the last call, oldest first. Events wait here until taken: a
        stream pushed to but never asked for its events keeps them all (its memory grows with
        the audio), so call this after each :meth:`push`."""
        return [StreamEvent(_KINDS[kind], f"SPEAKER_{speaker:02d}" if speaker >= 0 else None,
                            start, end, audio_time, latency)
                for kind, speaker, start, end, audio_time, latency in self._stream.poll()]

    def finish(self) -> Any:
        """Ends the stream: the last frames become final (their events wait for
        :meth:`events`) and the whole diarization comes back as a :class:`parley.Diarization`
        (also kept as :attr:`result`)."""
        from . import Diarization

        if self.result is None:
            self.result = Diarization(self._stream.finish())
        return self.result

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.finish()
