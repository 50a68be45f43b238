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
