#!/usr/bin/env python3
"""The Python API in a page: diarize one recording and print who spoke when.
    diarize.py AUDIO [MODELS_DIR]
Without MODELS_DIR the models are found as the parley command finds them ($PARLEY_MODELS, then
the per-user cache that `parley models fetch` fills, then the installed share/parley/models or the
build tree's build/models: docs/models.md)."""
import sys

import parley


def show_progress(fraction: float, stage: str) -> None:
    print(f"\r{stage:<24} {100 * fraction:3.0f}%", end="\n" if fraction >= 1 else "",
          file=sys.stderr)


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(f"usage: {sys.argv[0]} AUDIO [MODELS_DIR]", file=sys.stderr)
        return 2
    try:
        pipeline = parley.Pipeline(models_dir=sys.argv[2] if len(sys.argv) == 3 else None)
        diarization = pipeline(sys.argv[1], progress=show_progress)
    except parley.Error as error:
        print(f"parley: {error}", file=sys.stderr)
        return 1
    for warning in diarization.warnings:
        print(warning, file=sys.stderr)
    speakers, turns = len(diarization.speakers), len(diarization.turns)
    print(f"parley {parley.__version__}: {speakers} speaker{'' if speakers == 1 else 's'}, "
          f"{turns} turn{'' if turns == 1 else 's'}")
    for turn in diarization.turns:
        print(f"{turn.start:8.3f} {turn.end:8.3f} {turn.speaker}")
    return 0 if diarization.turns else 1


if __name__ == "__main__":
    sys.exit(main())
