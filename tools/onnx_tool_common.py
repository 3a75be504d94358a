"""Shared by the tools/*.py model rewriters: loading with a clear error, atomic saving."""
import os
import sys
import tempfile


def import_onnx(tool):
    try:
        import numpy
        import onnx
        del numpy  # imported only so that a missing numpy is reported here, with this message
        return onnx
    except ImportError:
        sys.exit(f"{tool}: the 'onnx' and 'numpy' Python packages are missing; install "
                 "python3-onnx (apt install python3-onnx) or `pip install onnx numpy`")


def load_model(onnx, tool, path):
    if not os.path.isfile(path):
        sys.exit(f"{tool}: {path}: model file not found")
    try:
        return onnx.load(path)
    except Exception as error:  # protobuf raises several types for a damaged file
        sys.exit(f"{tool}: {path}: not a readable ONNX model ({error})")


def save_model_atomically(onnx, model, target):
    """Checks the model, then writes it through a temporary file so that a concurrent reader
    (tests run in parallel) never sees a half-written model."""
    onnx.checker.check_model(model)
    directory = os.path.dirname(os.path.abspath(target))
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(suffix=".onnx", dir=directory)
    os.close(handle)
    try:
        onnx.save(model, temporary)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def set_metadata(model, key, value):
    """Records what a tool did in the model's metadata (parley reads it back through ONNX
    Runtime), replacing an earlier value of the same key."""
    kept = [prop for prop in model.metadata_props if prop.key != key]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    entry = model.metadata_props.add()
    entry.key, entry.value = key, value
