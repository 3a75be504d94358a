#!/usr/bin/python3
"""How much speaker-embedding work parley and sherpa-onnx do on one recording, from parley's
binarized segmentations (both systems take the same argmax of the same segmentation model, so
they see the same local speakers).

    build/parley diarize REC.wav --step S --save-intermediates DIR ...
    bench/peers/work_done.py DIR/segmentations.npz --step S [--samples N]

The ResNet34 costs the same per fbank frame whatever the input length (convolutions over
time, then pooling), so fbank frames through the network measure the embedding work:

  parley      --embedding-mode exact: one pass per chunk in which anyone speaks, over the
              whole 10 s chunk (998 frames), every local speaker pooled from that pass with
              its mask (src/stages/embedding.cpp, embed_chunks).
              --embedding-mode shared (the default): one pass over the recording padded to
              the end of its last chunk, each chunk pooling its slice (docs/embedding.md,
              section 8): (chunks - 1) x step + 998 frames at most (blocks no chunk needs are
              skipped).
  sherpa-onnx one pass per (chunk, local speaker) with at least 10 frames where that speaker
              speaks alone, over only those samples, concatenated (frame i of 589 maps to
              sample i / 589 * 160000 of the chunk; fbank with snip_edges=false gives
              round(samples / 160) frames) (offline-speaker-diarization-pyannote-impl.h,
              GetChunkSpeakerSampleIndexes and ComputeEmbeddings).
"""
import argparse
import sys

import numpy as np

WINDOW_SAMPLES = 160000
FRAME_SHIFT_SAMPLES = 160
PARLEY_FRAMES_PER_CHUNK = 1 + (WINDOW_SAMPLES - 400) // FRAME_SHIFT_SAMPLES  # snip_edges: 998
SHERPA_MIN_FRAMES = 10


def sherpa_pairs(binarized, step_samples, num_samples):
    """(chunk, speaker, fbank frames) for every pair sherpa-onnx embeds."""
    chunks, frames, speakers = binarized.shape
    clean = binarized * (binarized.sum(axis=2, keepdims=True) < 2)
    pairs = []
    for chunk in range(chunks):
        offset = chunk * step_samples
        for speaker in range(speakers):
            active = clean[chunk, :, speaker] != 0
            if active.sum() < SHERPA_MIN_FRAMES:
                continue
            samples = 0
            edges = np.diff(np.concatenate(([0], active.astype(np.int8), [0])))
            starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
            for start, end in zip(starts, ends):
                end = min(end, frames - 1)  # a span running to the end stops at frame 588
                first = int(np.float32(start) / frames * WINDOW_SAMPLES) + offset
                last = int(np.float32(end) / frames * WINDOW_SAMPLES) + offset
                samples += max(0, min(last, num_samples) - first)
            pairs.append((chunk, speaker, (samples + FRAME_SHIFT_SAMPLES // 2)
                          // FRAME_SHIFT_SAMPLES))
    return pairs


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("segmentations", help="segmentations.npz from --save-intermediates")
    parser.add_argument("--step", type=float, default=1.0, help="chunk step in seconds")
    parser.add_argument("--samples", type=int,
                        help="recording length in samples (default: what the chunks cover)")
    args = parser.parse_args(argv)
    binarized = np.load(args.segmentations)["segmentations"]
    chunks, frames, speakers = binarized.shape
    step_samples = int(round(args.step * 16000))
    num_samples = args.samples or (chunks - 1) * step_samples + WINDOW_SAMPLES
    active_chunks = int((binarized.reshape(chunks, -1) != 0).any(axis=1).sum())
    parley_frames = active_chunks * PARLEY_FRAMES_PER_CHUNK
    shared_frames = (chunks - 1) * (step_samples // FRAME_SHIFT_SAMPLES) + PARLEY_FRAMES_PER_CHUNK
    pairs = sherpa_pairs(binarized, step_samples, num_samples)
    sherpa_frames = sum(frames for _, _, frames in pairs)
    active_pairs = int((binarized.sum(axis=1) > 0).sum())
    print(f"chunks: {chunks} ({active_chunks} with speech), local speakers active: "
          f"{active_pairs} (chunk, speaker) pairs")
    print(f"parley exact:  {active_chunks} network passes of {PARLEY_FRAMES_PER_CHUNK} frames "
          f"= {parley_frames} fbank frames; embeddings for all {chunks * speakers} pairs")
    print(f"parley shared: one pass over the recording, at most {shared_frames} fbank frames; "
          f"embeddings for all {chunks * speakers} pairs")
    print(f"sherpa-onnx:   {len(pairs)} network passes, {sherpa_frames} fbank frames "
          f"(mean {sherpa_frames / max(1, len(pairs)):.0f} per pass); embeddings for "
          f"{len(pairs)} pairs, {active_pairs - len(pairs)} active pairs dropped (<"
          f"{SHERPA_MIN_FRAMES} frames alone)")
    print(f"frames through the network, parley / sherpa-onnx: exact "
          f"{parley_frames / max(1, sherpa_frames):.2f}, shared "
          f"{shared_frames / max(1, sherpa_frames):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
