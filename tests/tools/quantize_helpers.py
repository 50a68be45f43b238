"""Tiny models for the quantisation tests, built with onnx.helper from seeded weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np

WIDTH = 16
OUTLIER = 1e4


def chain_model(path: Path, outlier_at: int | None = 1, layers: int = 4, seed: int = 0) -> list[str]:
    """``layers`` MatMul layers (``mm0``..) with ReLU between them. When ``outlier_at`` is k, the
    input of ``mm{k}`` has one channel multiplied by OUTLIER (a Div by a constant, an op ONNX
    Runtime does not quantise) and the matching weight row divided by it: the FP32 result is
    unchanged, but the activation's range grows 10,000-fold, so 8 bits round every other channel
    to 0. Returns the layer names."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits, names = [], [], []
    current = "x"
    for k in range(layers):
        weight = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
        if k == outlier_at:
            divisor = np.ones(WIDTH, np.float32)
            divisor[3] = 1.0 / OUTLIER
            inits.append(numpy_helper.from_array(divisor, f"div{k}"))
            nodes.append(helper.make_node("Div", [current, f"div{k}"], [f"spread{k}"], name=f"spread{k}"))
            current = f"spread{k}"
            weight[3] /= OUTLIER
        inits.append(numpy_helper.from_array(weight, f"w{k}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{k}"], [f"h{k}"], name=f"mm{k}"))
        names.append(f"mm{k}")
        current = f"h{k}"
        if k < layers - 1:
            nodes.append(helper.make_node("Relu", [current], [f"r{k}"], name=f"relu{k}"))
            current = f"r{k}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
                              [helper.make_tensor_value_info(current, TensorProto.FLOAT, [1, WIDTH])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return names


def samples(count: int = 16, seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((1, WIDTH)).astype(np.float32)} for _ in range(count)]


def ort_quantize_static(model: Path, out: Path, feeds: list[dict], **options) -> Path:
    """ONNX Runtime's ``quantize_static`` on its own over ``feeds`` (the reference Studio's INT8 models
    are checked against): Conv layers unless ``options`` say otherwise (its other keywords: format,
    types, ``nodes_to_quantize``). Returns ``out``."""
    import logging

    from onnxruntime.quantization import CalibrationDataReader, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter(feeds)

        def get_next(self):
            return next(self.items, None)

    logging.getLogger().setLevel(logging.ERROR)
    quantize_static(str(model), str(out), Reader(), **{"op_types_to_quantize": ["Conv"], **options})
    return out


def dice_iou(outputs: list[np.ndarray], masks: list[np.ndarray]) -> tuple[float, float]:
    """Mean Dice and IoU of class 1 (argmax over a [1, C, H, W] output) against 0/1 masks, with numpy:
    2|A∩B| / (|A| + |B|) and |A∩B| / |A∪B| per picture (1 when both are empty)."""
    dice, iou = [], []
    for out, truth in zip(outputs, masks):
        predicted, truth = out[0].argmax(axis=0) == 1, truth > 0
        inter, a, b = (predicted & truth).sum(), predicted.sum(), truth.sum()
        dice.append(1.0 if a + b == 0 else 2 * inter / (a + b))
        iou.append(1.0 if a + b == 0 else inter / (predicted | truth).sum())
    return float(np.mean(dice)), float(np.mean(iou))
