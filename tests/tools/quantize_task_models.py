"""A tiny detector and a tiny segmenter for the task-target quantisation tests, with pictures whose
objects are drawn here, so their boxes and masks are known without asking any model.

Both read a picture's brightness (``unit`` preset: 0..1) and have one layer whose input carries a
huge outlier: a channel equal to the brightness plus 1000 (an Add), which the next layer ignores
(weight 0). In FP32 that changes nothing; quantised, the layer's input range is 0..1001, so its
8-bit step (about 4) rounds the brightness to 0 and the layer's answer vanishes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SIDE = 16          # the models' input is SIDE x SIDE
SQUARE = 5         # the detector's objects: bright squares of SQUARE x SQUARE pixels
OUTLIER_BIAS = 1000.0


def _brightness_layers(nodes, inits, helper, numpy_helper, source: str = "image") -> str:
    """``conv0`` (1x1, identity on RGB), ``conv1`` (1x1: the mean of RGB, twice), then an Add:
    channel 0 the mean, channel 1 the mean plus OUTLIER_BIAS. Returns the name of the Add's output."""
    eye = np.eye(3, dtype=np.float32).reshape(3, 3, 1, 1)
    inits += [numpy_helper.from_array(eye, "w0"), numpy_helper.from_array(np.zeros(3, np.float32), "b0")]
    nodes.append(helper.make_node("Conv", [source, "w0", "b0"], ["rgb"], name="conv0"))
    w1 = np.full((2, 3, 1, 1), 1.0 / 3.0, np.float32)
    inits += [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(np.zeros(2, np.float32), "b1"),
              numpy_helper.from_array(np.array([0.0, OUTLIER_BIAS], np.float32).reshape(1, 2, 1, 1), "spread")]
    nodes.append(helper.make_node("Conv", ["rgb", "w1", "b1"], ["mean"], name="conv1"))
    # an Add (not quantised) makes the outlier, so only the layer reading it suffers
    nodes.append(helper.make_node("Add", ["mean", "spread"], ["bright"], name="outlier"))
    return "bright"


def detector(path: Path) -> list[str]:
    """A YOLOv8-layout detector (1, 4 + 1, SIDE * SIDE), one class: per pixel cell a SQUARE x SQUARE
    box centred on the cell and, as its score, the mean brightness of the SQUARE x SQUARE window
    around it (``conv2``, the layer with the outlier input). A bright square scores 1.0 at its
    centre cell, whose box is the square itself. Returns the quantisable layers."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    bright = _brightness_layers(nodes, inits, helper, numpy_helper)
    w2 = np.zeros((1, 2, SQUARE, SQUARE), np.float32)
    w2[0, 0] = 1.0 / SQUARE ** 2
    inits += [numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(np.zeros(1, np.float32), "b2")]
    pad = SQUARE // 2
    nodes.append(helper.make_node("Conv", [bright, "w2", "b2"], ["score"], name="conv2", pads=[pad] * 4))
    ys, xs = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)
    boxes = np.stack([xs + 0.5, ys + 0.5, np.full_like(xs, SQUARE), np.full_like(xs, SQUARE)])[None]
    inits += [numpy_helper.from_array(boxes.astype(np.float32), "grid"),
              numpy_helper.from_array(np.array([1, 5, SIDE * SIDE], np.int64), "shape")]
    nodes.append(helper.make_node("Concat", ["grid", "score"], ["cells"], name="concat", axis=1))
    nodes.append(helper.make_node("Reshape", ["cells", "shape"], ["output"], name="reshape"))
    graph = helper.make_graph(nodes, "detector", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                                 [1, 3, SIDE, SIDE])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 5, SIDE * SIDE])],
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return ["conv0", "conv1", "conv2"]


def segmenter(path: Path) -> list[str]:
    """A 2-class segmenter (1, 2, SIDE, SIDE): foreground where the brightness is above 0.5
    (``conv2``, 1x1 logits +-10 (b - 0.5), the layer with the outlier input)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    bright = _brightness_layers(nodes, inits, helper, numpy_helper)
    w2 = np.array([[-10.0, 0.0], [10.0, 0.0]], np.float32).reshape(2, 2, 1, 1)
    inits += [numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(np.array([5.0, -5.0], np.float32), "b2")]
    nodes.append(helper.make_node("Conv", [bright, "w2", "b2"], ["mask"], name="conv2"))
    graph = helper.make_graph(nodes, "segmenter", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                                  [1, 3, SIDE, SIDE])],
                              [helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 2, SIDE, SIDE])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return ["conv0", "conv1", "conv2"]


def _backgrounds(folder: Path, truth_folder: str, count: int, seed: int):
    """Make ``folder`` and ``truth_folder`` beside it; yield (index, the seeded generator, a dark
    noisy SIDE x SIDE background) ``count`` times, for the caller to draw on and save."""
    rng = np.random.default_rng(seed)
    folder.mkdir()
    (folder.parent / truth_folder).mkdir()
    for i in range(count):
        yield i, rng, rng.integers(0, 40, (SIDE, SIDE, 3)).astype(np.uint8)


def square_pictures(folder: Path, count: int, seed: int = 0) -> dict[str, list[tuple[int, int, int, int]]]:
    """``count`` pictures with one or two bright SQUARE x SQUARE squares on a dark noisy background
    (PNG), their boxes ``{stem: [(x1, y1, x2, y2)]}`` in pixels, and a VOC XML per picture in
    ``folder/boxes`` naming the class ``square``."""
    import cv2

    truth = {}
    for i, rng, image in _backgrounds(folder, "boxes", count, seed):
        boxes = []
        for _ in range(1 + i % 2):
            while True:
                x, y = (int(v) for v in rng.integers(0, SIDE - SQUARE + 1, 2))
                if all(abs(x - bx) >= SQUARE + 1 or abs(y - by) >= SQUARE + 1 for bx, by, *_ in boxes):
                    break
            image[y:y + SQUARE, x:x + SQUARE] = rng.integers(215, 256, (SQUARE, SQUARE, 3))
            boxes.append((x, y, x + SQUARE, y + SQUARE))
        stem = f"p{i:02d}"
        cv2.imwrite(str(folder / f"{stem}.png"), image)
        objects = "".join(f"<object><name>square</name><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax>"
                          f"<ymax>{y2}</ymax></bndbox></object>" for x1, y1, x2, y2 in boxes)
        (folder.parent / "boxes" / f"{stem}.xml").write_text(f"<annotation>{objects}</annotation>")
        truth[stem] = boxes
    return truth


def blob_pictures(folder: Path, count: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``count`` pictures with a bright rectangle on a dark noisy background (PNG), their masks
    ``{stem: uint8 mask}`` (1 inside the rectangle), also written as PNGs to ``folder/../masks``."""
    import cv2

    truth = {}
    for i, rng, image in _backgrounds(folder, "masks", count, seed):
        mask = np.zeros((SIDE, SIDE), np.uint8)
        x, y = (int(v) for v in rng.integers(0, SIDE // 2, 2))
        w, h = (int(v) for v in rng.integers(3, SIDE // 2, 2))
        image[y:y + h, x:x + w] = rng.integers(200, 256, (h, w, 3))
        mask[y:y + h, x:x + w] = 1
        stem = f"b{i:02d}"
        cv2.imwrite(str(folder / f"{stem}.png"), image)
        cv2.imwrite(str(folder.parent / "masks" / f"{stem}.png"), mask)
        truth[stem] = mask
    return truth


def unit_tensor(path: Path) -> np.ndarray:
    """A picture as the ``unit`` preset feeds it, by hand: RGB / 255, NCHW (the pictures are the
    input's size, so no resize)."""
    import cv2

    image = cv2.imread(str(path))[:, :, ::-1].astype(np.float32) / 255.0
    return np.ascontiguousarray(image.transpose(2, 0, 1)[None])


def ort_outputs(model: Path, tensors: list[np.ndarray]) -> list[np.ndarray]:
    """The first output of plain ONNX Runtime runs of ``model`` on each tensor (input ``image``)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return [session.run(None, {"image": t})[0] for t in tensors]
