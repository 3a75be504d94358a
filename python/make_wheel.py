#!/usr/bin/env python3
"""Writes a wheel of an importable package folder with the standard library only (no PyPI here):
make_wheel.py --package build/python/parley --out build/python --version 0.1.0 --license LICENSE.
The folder holds the compiled extension and the shared libraries it loads through $ORIGIN."""
import argparse
import base64
import hashlib
import pathlib
import sys
import sysconfig
import zipfile


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--package", type=pathlib.Path, required=True)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--license", type=pathlib.Path, required=True,
                        help="the project's LICENSE file (MIT), copied into the .dist-info folder")
    arguments = parser.parse_args()

    python_tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform_tag = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"{python_tag}-{python_tag}-{platform_tag}"
    name = arguments.package.name
    dist_info = f"{name}-{arguments.version}.dist-info"
    wheel_path = arguments.out / f"{name}-{arguments.version}-{tag}.whl"
    for stale in arguments.out.glob(f"{name}-*.whl"):
        stale.unlink()

    metadata = "\n".join([
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {arguments.version}",
        "Summary: Speaker diarization (who spoke when): pyannote community-1 on ONNX Runtime",
        "License: MIT",
        "Classifier: License :: OSI Approved :: MIT License",
        "Requires-Python: >=3.9",
        "Provides-Extra: numpy",
        'Requires-Dist: numpy; extra == "numpy"',
        "",
    ])
    wheel = "\n".join(["Wheel-Version: 1.0", "Generator: parley make_wheel.py",
                       "Root-Is-Purelib: false", f"Tag: {tag}", ""])
    records = []
    with zipfile.ZipFile(wheel_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(arguments.package.rglob("*")):
            if path.is_dir() or "__pycache__" in path.parts:
                continue
            member = f"{name}/{path.relative_to(arguments.package).as_posix()}"
            data = path.read_bytes()
            info = zipfile.ZipInfo(member)
            info.external_attr = (path.stat().st_mode & 0o777) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
            records.append(record_line(member, data))
        for member, text in ((f"{dist_info}/METADATA", metadata),
                             (f"{dist_info}/WHEEL", wheel),
                             (f"{dist_info}/LICENSE", arguments.license.read_text())):
            archive.writestr(member, text)
            records.append(record_line(member, text.encode()))
        records.append(f"{dist_info}/RECORD,,")
        archive.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    print(wheel_path)


if __name__ == "__main__":
    main()
