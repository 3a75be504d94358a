#!/usr/bin/python3
"""Tests tools/add_sherpa_metadata.py on tiny models built here (no network, no shared data):
the keys and values sherpa-onnx reads, the graph and weights left as they were, and the
refusals for models sherpa-onnx would feed the wrong input. Run by CTest as
tools_add_sherpa_metadata."""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "add_sherpa_metadata.py")


def segmentation_model(classes=7, element_type=TensorProto.FLOAT):
    """waveform [1, 1, samples] -> Conv (stride 270) -> [1, frames, classes]."""
    weight = numpy_helper.from_array(
        np.random.RandomState(1).standard_normal((classes, 1, 991)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["waveform", "w"], ["scores"], strides=[270]),
             helper.make_node("Transpose", ["scores"], ["segmentation"], perm=[0, 2, 1])]
    graph = helper.make_graph(
        nodes, "tiny_segmentation",
        [helper.make_tensor_value_info("waveform", element_type, [1, 1, "samples"])],
        [helper.make_tensor_value_info("segmentation", element_type, [1, "frames", classes])],
        initializer=[weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def embedding_model(bins=80, dimension=16):
    """feats [B, T, bins] -> mean over T -> MatMul -> embs [B, dimension]."""
    weight = numpy_helper.from_array(
        np.random.RandomState(2).standard_normal((bins, dimension)).astype(np.float32), "w")
    nodes = [helper.make_node("ReduceMean", ["feats"], ["pooled"], axes=[1], keepdims=0),
             helper.make_node("MatMul", ["pooled", "w"], ["embs"])]
    graph = helper.make_graph(
        nodes, "tiny_embedding",
        [helper.make_tensor_value_info("feats", TensorProto.FLOAT, ["B", "T", bins])],
        [helper.make_tensor_value_info("embs", TensorProto.FLOAT, ["B", dimension])],
        initializer=[weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    entry = model.metadata_props.add()
    entry.key, entry.value = "parley.speed_twin", "true"
    return model


class AddSherpaMetadata(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)

    def run_tool(self, kind, model, *options):
        source = os.path.join(self.directory.name, f"{kind}.onnx")
        target = os.path.join(self.directory.name, f"{kind}-sherpa.onnx")
        onnx.save(model, source)
        completed = subprocess.run([sys.executable, TOOL, kind, source, target, *options],
                                   capture_output=True, text=True, check=False)
        return completed, target

    def metadata(self, path):
        return {prop.key: prop.value for prop in onnx.load(path).metadata_props}

    def assert_same_graph(self, original, path):
        self.assertEqual(onnx.load(path).graph.SerializeToString(),
                         original.graph.SerializeToString())

    def test_segmentation_gets_pyannote_keys(self):
        model = segmentation_model()
        completed, target = self.run_tool("segmentation", model)
        self.assertEqual(completed.returncode, 0, completed.stderr)
        self.assertEqual(self.metadata(target), {
            "model_type": "pyannote-segmentation-3.0", "version": "1", "sample_rate": "16000",
            "window_size": "160000", "window_shift": "16000", "receptive_field_size": "991",
            "receptive_field_shift": "270", "num_speakers": "3", "powerset_max_classes": "2",
            "num_classes": "7"})
        self.assert_same_graph(model, target)

    def test_window_shift_follows_the_ratio(self):
        completed, target = self.run_tool("segmentation", segmentation_model(),
                                          "--window-shift-ratio", "0.2")
        self.assertEqual(completed.returncode, 0, completed.stderr)
        self.assertEqual(self.metadata(target)["window_shift"], "32000")

    def test_powerset_layout_is_checked_against_the_output_classes(self):
        completed, target = self.run_tool("segmentation", segmentation_model(classes=11),
                                          "--num-speakers", "4")
        self.assertEqual(completed.returncode, 0, completed.stderr)
        metadata = self.metadata(target)
        self.assertEqual((metadata["num_speakers"], metadata["powerset_max_classes"],
                          metadata["num_classes"]), ("4", "2", "11"))

    def test_embedding_gets_wespeaker_keys_and_keeps_its_own(self):
        model = embedding_model()
        completed, target = self.run_tool("embedding", model)
        self.assertEqual(completed.returncode, 0, completed.stderr)
        metadata = self.metadata(target)
        self.assertEqual(metadata["framework"], "wespeaker")
        self.assertEqual(metadata["output_dim"], "16")
        self.assertEqual(metadata["sample_rate"], "16000")
        self.assertEqual(metadata["normalize_samples"], "0")
        self.assertEqual(metadata["parley.speed_twin"], "true")
        self.assertNotIn("feature_normalize_type", metadata)
        self.assert_same_graph(model, target)

    def test_feature_normalization_on_request(self):
        completed, target = self.run_tool("embedding", embedding_model(),
                                          "--feature-normalize-type", "global-mean")
        self.assertEqual(completed.returncode, 0, completed.stderr)
        self.assertEqual(self.metadata(target)["feature_normalize_type"], "global-mean")

    def test_refuses_an_embedding_model_that_does_not_take_80_bins(self):
        completed, target = self.run_tool("embedding", embedding_model(bins=40))
        self.assertNotEqual(completed.returncode, 0)
        self.assertIn("fbank features [batch, frames, 80]", completed.stderr)
        self.assertFalse(os.path.exists(target))

    def test_refuses_a_float16_segmentation_model(self):
        completed, target = self.run_tool("segmentation",
                                          segmentation_model(element_type=TensorProto.FLOAT16))
        self.assertNotEqual(completed.returncode, 0)
        self.assertIn("not float32", completed.stderr)
        self.assertFalse(os.path.exists(target))

    def test_refuses_an_output_that_is_not_a_powerset(self):
        completed, _ = self.run_tool("segmentation", segmentation_model(classes=5))
        self.assertNotEqual(completed.returncode, 0)
        self.assertIn("not the 7 of a powerset of 3 speakers", completed.stderr)

    def test_refuses_a_segmentation_model_given_as_embedding(self):
        completed, _ = self.run_tool("embedding", segmentation_model())
        self.assertNotEqual(completed.returncode, 0)
        self.assertIn("fbank features", completed.stderr)


if __name__ == "__main__":
    unittest.main()
