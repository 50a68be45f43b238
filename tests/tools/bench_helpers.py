"""Small ONNX models for the benchmark tests (built with onnx.helper, deterministic)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def matmul_model(path: Path, batch: int | str = "N", size: int = 64, seed: int = 0) -> Path:
    """x[batch, size] @ W[size, size] + relu; ``batch`` a number or a symbolic name (dynamic)."""
    rng = np.random.default_rng(seed)
    weight = numpy_helper.from_array(rng.standard_normal((size, size)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["y"])], "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, size])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path
