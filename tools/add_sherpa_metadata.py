#!/usr/bin/python3
"""Copies a segmentation or speaker-embedding model, adding the metadata sherpa-onnx reads.

sherpa-onnx refuses ONNX models without its own `metadata_props` (it reads them with
`SHERPA_ONNX_READ_META_DATA`, which exits the process when a key is missing). To run
sherpa-onnx's offline speaker diarization on exactly the files parley uses, this tool writes a
copy of each with those keys added; the graph and the weights are untouched.

segmentation (sherpa-onnx/csrc/offline-speaker-segmentation-pyannote-model.cc; values as
scripts/pyannote/segmentation/export-onnx.py writes them for pyannote segmentation-3.0):
    sample_rate 16000, window_size 160000 (10 s chunks), receptive_field_size 991 and
    receptive_field_shift 270 (samples: one output frame covers 0.0619375 s every 0.016875 s,
    the SincNet front end's receptive field, docs/pipeline.md section 1), num_speakers 3 and
    powerset_max_classes 2 (options; the output must have the matching number of classes, 7),
    num_classes, model_type pyannote-segmentation-3.0, version 1.
    `window_shift` (samples between chunks) is added too: sherpa-onnx up to 1.13.4 read it from
    the model, later versions take `window_shift_ratio` (default 0.1) from their configuration
    and ignore the key.
embedding (sherpa-onnx/csrc/speaker-embedding-extractor-model.cc; values as
scripts/wespeaker/add_meta_data.py writes them for WeSpeaker exports):
    framework wespeaker, sample_rate 16000, output_dim (read from the model's output shape),
    normalize_samples 0 (sherpa scales [-1, 1] samples by 32768 before its fbank, as WeSpeaker
    and pyannote do), language, url, comment. `feature_normalize_type` is left out, as
    add_meta_data.py does, unless --feature-normalize-type global-mean is given (sherpa then
    subtracts each fbank bin's mean over the input, as parley and pyannote do).

The model must look like what sherpa-onnx will feed it: segmentation takes one float waveform
input [batch, 1, samples] and gives [batch, frames, 7] powerset scores; embedding takes one fbank
input [batch, frames, 80] and gives [batch, dim].

Usage:
    add_sherpa_metadata.py segmentation INPUT.onnx OUTPUT.onnx [--window-shift-ratio 0.1]
    add_sherpa_metadata.py embedding INPUT.onnx OUTPUT.onnx [--feature-normalize-type global-mean]
Needs python3-onnx (Debian) or `pip install onnx`. Output is deterministic for a given input.
"""
import argparse
import sys

from onnx_tool_common import import_onnx, load_model, save_model_atomically, set_metadata

TOOL = "add_sherpa_metadata.py"
onnx = import_onnx(TOOL)

SAMPLE_RATE = 16000
CHUNK_SECONDS = 10
# pyannote segmentation-3.0's SincNet front end (docs/pipeline.md, section 1).
RECEPTIVE_FIELD_SIZE = 991
RECEPTIVE_FIELD_SHIFT = 270
FBANK_BINS = 80


def fail(message):
    sys.exit(f"{TOOL}: {message}")


def graph_inputs(model):
    initializers = {tensor.name for tensor in model.graph.initializer}
    return [value for value in model.graph.input if value.name not in initializers]


def dims(value):
    """Each axis as an int (fixed) or a str (symbolic, or '?' when unnamed)."""
    shape = value.type.tensor_type.shape
    return [axis.dim_value if axis.HasField("dim_value") else (axis.dim_param or "?")
            for axis in shape.dim]


def single_float_signature(model, path):
    inputs, outputs = graph_inputs(model), list(model.graph.output)
    if len(inputs) != 1 or len(outputs) != 1:
        fail(f"{path}: sherpa-onnx feeds one input and reads one output; this model has "
             f"{len(inputs)} inputs and {len(outputs)} outputs")
    for value in (inputs[0], outputs[0]):
        if value.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            fail(f"{path}: tensor '{value.name}' is not float32; sherpa-onnx passes float32 "
                 "(upcast the model first: tools/upcast_fp16_model.py)")
    return dims(inputs[0]), dims(outputs[0])


def powerset_classes(num_speakers, max_set_size):
    """Number of powerset classes: the empty set and every set of 1..max_set_size speakers."""
    count, combinations = 1, 1
    for size in range(1, max_set_size + 1):
        combinations = combinations * (num_speakers - size + 1) // size
        count += combinations
    return count


def segmentation_metadata(model, path, window_shift_ratio, num_speakers, powerset_max_classes):
    input_dims, output_dims = single_float_signature(model, path)
    if len(input_dims) != 3 or input_dims[1] != 1:
        fail(f"{path}: expected a waveform input [batch, 1, samples], got {input_dims}")
    if len(output_dims) != 3 or not isinstance(output_dims[2], int):
        fail(f"{path}: expected a [batch, frames, classes] output, got {output_dims}")
    if not 0 < window_shift_ratio <= 1:
        fail(f"--window-shift-ratio must be in (0, 1], got {window_shift_ratio}")
    if powerset_max_classes not in (1, 2) or not 1 <= powerset_max_classes <= num_speakers:
        fail(f"sherpa-onnx decodes powersets of sets of 1 or 2 speakers (at most "
             f"--num-speakers); got --powerset-max-classes {powerset_max_classes}")
    num_classes = output_dims[2]
    if num_classes != powerset_classes(num_speakers, powerset_max_classes):
        fail(f"{path}: the output has {num_classes} classes, not the "
             f"{powerset_classes(num_speakers, powerset_max_classes)} of a powerset of "
             f"{num_speakers} speakers in sets of at most {powerset_max_classes}; pass "
             "--num-speakers and --powerset-max-classes to match the model")
    window_size = CHUNK_SECONDS * SAMPLE_RATE
    return {
        "model_type": "pyannote-segmentation-3.0",
        "version": "1",
        "sample_rate": SAMPLE_RATE,
        "window_size": window_size,
        "window_shift": int(window_shift_ratio * window_size),
        "receptive_field_size": RECEPTIVE_FIELD_SIZE,
        "receptive_field_shift": RECEPTIVE_FIELD_SHIFT,
        "num_speakers": num_speakers,
        "powerset_max_classes": powerset_max_classes,
        "num_classes": num_classes,
    }


def embedding_metadata(model, path, feature_normalize_type):
    input_dims, output_dims = single_float_signature(model, path)
    if len(input_dims) != 3 or input_dims[2] != FBANK_BINS:
        fail(f"{path}: sherpa-onnx's WeSpeaker path feeds fbank features [batch, frames, "
             f"{FBANK_BINS}]; this model takes {input_dims}")
    if len(output_dims) != 2 or not isinstance(output_dims[1], int):
        fail(f"{path}: expected an embedding output [batch, dim], got {output_dims}")
    metadata = {
        "framework": "wespeaker",
        "language": "English",
        "url": "https://github.com/wenet-e2e/wespeaker/blob/master/docs/pretrained.md",
        "comment": "metadata added by parley tools/add_sherpa_metadata.py",
        "sample_rate": SAMPLE_RATE,
        "output_dim": output_dims[1],
        "normalize_samples": 0,
    }
    if feature_normalize_type:
        metadata["feature_normalize_type"] = feature_normalize_type
    return metadata


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=("segmentation", "embedding"))
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--window-shift-ratio", type=float, default=0.1,
                        help="segmentation: chunk step as a fraction of the 10 s window, "
                             "written as window_shift for sherpa-onnx <= 1.13.4 (default 0.1)")
    parser.add_argument("--num-speakers", type=int, default=3,
                        help="segmentation: local speakers per chunk (default 3, as "
                             "segmentation-3.0)")
    parser.add_argument("--powerset-max-classes", type=int, default=2,
                        help="segmentation: most speakers active at once (default 2)")
    parser.add_argument("--feature-normalize-type", choices=("global-mean",),
                        help="embedding: make sherpa-onnx subtract the fbank mean")
    args = parser.parse_args(argv)
    model = load_model(onnx, TOOL, args.input)
    if args.kind == "segmentation":
        metadata = segmentation_metadata(model, args.input, args.window_shift_ratio,
                                         args.num_speakers, args.powerset_max_classes)
    else:
        metadata = embedding_metadata(model, args.input, args.feature_normalize_type)
    for key, value in metadata.items():
        set_metadata(model, key, str(value))
    save_model_atomically(onnx, model, args.output)
    summary = ", ".join(f"{key}={value}" for key, value in metadata.items())
    print(f"wrote {args.output}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
