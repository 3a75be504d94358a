#!/usr/bin/env python3
"""Agreement between two `parley diarize --save-intermediates` folders of the same recording:
the share of binarized segmentation frames that are equal, and the cosine of the raw embeddings
of every (chunk, speaker) pair active in both. This is the gate a precision change must pass
(docs/benchmarks.md, "Toward the hardware limit": at least 99.9 % of frames equal and every
cosine at least 0.999). Python's standard library only, so it runs on a bare GPU machine.

    tools/compare_intermediates.py REFERENCE_DIR CANDIDATE_DIR [--json]

Exit status 0 when the gate passes, 1 when it does not, 2 on unreadable input."""
import argparse
import ast
import json
import math
import struct
import sys
import zipfile


def read_npy(data):
    if data[:6] != b"\x93NUMPY":
        raise ValueError("not an .npy member")
    major = data[6]
    header_length_size = 2 if major == 1 else 4
    header_length = int.from_bytes(data[8:8 + header_length_size], "little")
    start = 8 + header_length_size
    header = ast.literal_eval(data[start:start + header_length].decode("latin1"))
    if header["fortran_order"]:
        raise ValueError("Fortran-ordered arrays are not read")
    codes = {"<f4": "f", "<f8": "d"}
    if header["descr"] not in codes:
        raise ValueError(f"dtype {header['descr']} is not read")
    shape = tuple(header["shape"])
    count = math.prod(shape)
    values = struct.unpack_from(f"<{count}{codes[header['descr']]}", data, start + header_length)
    return shape, values


def read_npz(path):
    with zipfile.ZipFile(path) as archive:
        name = archive.namelist()[0]
        return read_npy(archive.read(name))


def compare(reference, candidate):
    seg_shape, seg_a = read_npz(f"{reference}/segmentations.npz")
    seg_shape_b, seg_b = read_npz(f"{candidate}/segmentations.npz")
    if seg_shape != seg_shape_b:
        raise ValueError(f"segmentations differ in shape: {seg_shape} and {seg_shape_b}")
    equal_frames = sum(1 for a, b in zip(seg_a, seg_b) if a == b)
    emb_shape, emb_a = read_npz(f"{reference}/raw_embeddings.npz")
    emb_shape_b, emb_b = read_npz(f"{candidate}/raw_embeddings.npz")
    if emb_shape != emb_shape_b:
        raise ValueError(f"embeddings differ in shape: {emb_shape} and {emb_shape_b}")
    dimension = emb_shape[-1]
    cosines = []
    for start in range(0, len(emb_a), dimension):
        a = emb_a[start:start + dimension]
        b = emb_b[start:start + dimension]
        if any(math.isnan(x) for x in a) or any(math.isnan(x) for x in b):
            continue  # a speaker not active in that chunk: pyannote leaves it NaN
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(x * x for x in b))
        if norm > 0:
            cosines.append(sum(x * y for x, y in zip(a, b)) / norm)
    return {
        "frames": len(seg_a),
        "equal_frames": equal_frames,
        "equal_frame_share": equal_frames / len(seg_a) if seg_a else 1.0,
        "pairs": len(cosines),
        "min_cosine": min(cosines) if cosines else None,
        "mean_cosine": sum(cosines) / len(cosines) if cosines else None,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference")
    parser.add_argument("candidate")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    try:
        result = compare(args.reference, args.candidate)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, struct.error) as error:
        print(f"compare_intermediates: {error}", file=sys.stderr)
        return 2
    result["passes"] = result["equal_frame_share"] >= 0.999 and (
        result["min_cosine"] is None or result["min_cosine"] >= 0.999)
    if args.json:
        print(json.dumps(result))
    else:
        cosine = "n/a" if result["min_cosine"] is None else f"{result['min_cosine']:.6f}"
        print(f"frames equal {100 * result['equal_frame_share']:.3f} % "
              f"({result['equal_frames']} of {result['frames']}), "
              f"{result['pairs']} active pairs, min cosine {cosine}: "
              f"{'passes' if result['passes'] else 'FAILS'} the gate")
    return 0 if result["passes"] else 1


if __name__ == "__main__":
    sys.exit(main())
