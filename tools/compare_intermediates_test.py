#!/usr/bin/env python3
"""tools/compare_intermediates.py on small intermediates folders written here: equal folders
pass, a folder with too many changed frames or a turned embedding fails the gate."""
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare_intermediates.py")


def write_npz(path, shape, values):
    header = repr({"descr": "<f4", "fortran_order": False, "shape": shape}).encode("latin1")
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    data = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
    data += struct.pack(f"<{len(values)}f", *values)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("arr_0.npy", data)


def folder(root, name, segmentations, embeddings):
    path = os.path.join(root, name)
    os.makedirs(path)
    write_npz(os.path.join(path, "segmentations.npz"), (2, 1000, 3), segmentations)
    write_npz(os.path.join(path, "raw_embeddings.npz"), (2, 3, 4), embeddings)
    return path


def run(reference, candidate):
    return subprocess.run([sys.executable, TOOL, reference, candidate], capture_output=True,
                          text=True)


def main():
    nan = float("nan")
    segmentations = [float((i // 7) % 2) for i in range(6000)]
    embeddings = [1.0, 2.0, 3.0, 4.0] * 4 + [nan] * 8
    with tempfile.TemporaryDirectory() as root:
        reference = folder(root, "reference", segmentations, embeddings)
        same = folder(root, "same", segmentations, [x * 1.0001 for x in embeddings])
        flipped = [1.0 - x if i < 10 else x for i, x in enumerate(segmentations)]
        too_many_frames = folder(root, "frames", flipped, embeddings)
        turned = [4.0, 3.0, 2.0, 1.0] + embeddings[4:]
        turned_embedding = folder(root, "turned", segmentations, turned)
        checks = [
            (run(reference, same), 0, "passes"),
            (run(reference, too_many_frames), 1, "99.833 %"),
            (run(reference, turned_embedding), 1, "FAILS"),
            (run(reference, os.path.join(root, "missing")), 2, "No such file"),
        ]
        for result, status, text in checks:
            output = result.stdout + result.stderr
            assert result.returncode == status, (result.returncode, output)
            assert text in output, output
    print("compare_intermediates: 4 checks passed")


if __name__ == "__main__":
    main()
