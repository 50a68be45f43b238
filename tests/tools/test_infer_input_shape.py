"""``studio infer`` sizes a picture input with dynamic dims as every command does,
``--input-shape NAME=DIMS``; ``--size HxW`` is the older spelling of the same option. The model
below answers with the height and width it was fed, so what ONNX Runtime saw is checked against
numpy, not against Studio's own numbers."""

from __future__ import annotations

import json
import subprocess
import sys

import cv2
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from studio.core.errors import UserError
from studio.ops.picture_size import picture_size

SCALE = 0.05


def _size_model(path):
    """images [1, 3, h, w] -> logits [1, 2] = (h, w) * SCALE: the class scores tell the fed size."""
    x = helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, "h", "w"])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 2])
    nodes = [helper.make_node("Shape", ["images"], ["shape"]),
             helper.make_node("Slice", ["shape", "start", "end"], ["hw"]),
             helper.make_node("Cast", ["hw"], ["hw_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["hw_f", "scale"], ["scaled"]),
             helper.make_node("Reshape", ["scaled", "two"], ["logits"])]
    inits = [helper.make_tensor("start", TensorProto.INT64, [1], [2]),
             helper.make_tensor("end", TensorProto.INT64, [1], [4]),
             helper.make_tensor("scale", TensorProto.FLOAT, [], [SCALE]),
             helper.make_tensor("two", TensorProto.INT64, [2], [1, 2])]
    graph = helper.make_graph(nodes, "size", [x], [y], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


@pytest.fixture
def model_and_picture(tmp_path):
    model = _size_model(tmp_path / "size.onnx")
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    cv2.imwrite(str(pictures / "p.png"), np.full((30, 50, 3), 128, np.uint8))
    return model, pictures


def _infer(model, pictures, out, *extra):
    done = subprocess.run([sys.executable, "-m", "studio", "infer", str(model), str(pictures), "-o", str(out),
                           "--task", "classify", "--no-overlays", "--json", *extra],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["images"][0]["top"]


def _expected(model, height: int, width: int):
    """The model's own ONNX Runtime run on an array of that size, and numpy's softmax of it."""
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    logits = session.run(None, {"images": np.zeros((1, 3, height, width), np.float32)})[0].reshape(-1)
    probs = np.exp(logits - logits.max())
    return probs / probs.sum()


def test_input_shape_and_the_old_size_feed_the_same_height_and_width(model_and_picture, tmp_path):
    model, pictures = model_and_picture
    expected = _expected(model, 48, 64)
    for extra in (["--input-shape", "images=1,3,48,64"], ["--input-shape", "images:1,3,48,64"],
                  ["--size", "48x64"]):
        top = _infer(model, pictures, tmp_path / extra[1].replace(",", "_").replace(":", "_"), *extra)
        assert top[0]["class"] == int(np.argmax(expected)), extra
        assert top[0]["score"] == pytest.approx(float(expected.max()), abs=1e-6), extra
    # another size gives other scores: the option reached the model
    other = _infer(model, pictures, tmp_path / "o", "--input-shape", "images=1,3,64,32")
    assert other[0]["class"] == int(np.argmax(_expected(model, 64, 32))) == 0


def test_channels_last_shapes_read_height_and_width_and_doubtful_ones_are_refused(model_and_picture):
    model, _ = model_and_picture
    assert picture_size("images=1,48,64,3", model) == picture_size("images=1,3,48,64", model)
    assert picture_size("images=1,48,64,3", model) != picture_size("images=1,3,64,48", model)
    with pytest.raises(UserError, match="both ends"):
        picture_size("images=1,3,8,3", model)
    with pytest.raises(UserError, match="not an input of the model"):
        picture_size("pixels=1,3,48,64", model)
    with pytest.raises(UserError, match="one at a time"):
        picture_size("images=2,3,48,64", model)


def test_quantize_sizes_its_calibration_pictures_with_the_same_words_as_infer(tmp_path):
    """One spelling per concept: quantize reads --input-shape as infer does, and the old --size too."""
    import argparse

    from studio.core import options
    from studio.ops import infer, quantize

    def size_of(request_class, words):
        parser = argparse.ArgumentParser()
        options.add_arguments(parser, request_class)
        return options.from_args(request_class, parser.parse_args(words)).size

    common = [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "out")]
    for request_class, extra in ((infer.Request, [str(tmp_path)]), (quantize.Request, ["--calib", str(tmp_path)])):
        assert size_of(request_class, common[:1] + extra + common[1:] + ["--input-shape", "x=1,3,48,64"]) == (48, 64)
        assert size_of(request_class, common[:1] + extra + common[1:] + ["--size", "48x64"]) == (48, 64)
