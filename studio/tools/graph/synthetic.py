"""Deterministic ONNX models of any size for benchmarks, tests and the demo.

``build_synthetic(n)`` stacks ResNet-like blocks (conv/bn/relu with a skip), transformer-like blocks
(parallel q/k/v branches, softmax, residual adds) and U-Net-like stages (a long skip from each
encoder stage to its decoder stage) until about ``n`` nodes, with ``/``-scoped names such as
``stage3/block12/attn/q`` so the viewer can group them. Weights are tiny (4 channels) to keep files
small; the structure, not the numerics, is the point.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

CHANNELS = 4
BLOCKS_PER_STAGE = 24


class _Builder:
    def __init__(self, seed: int):
        from onnx import TensorProto, helper

        self.helper, self.TP = helper, TensorProto
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self._shared: dict[str, str] = {}

    def op(self, op_type: str, inputs: list[str], name: str, **attrs) -> str:
        self.nodes.append(self.helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name

    def weight(self, key: str, shape: tuple) -> str:
        # Shared weights per kind keep files small even at 100k nodes.
        if key not in self._shared:
            from onnx import numpy_helper

            data = (self.rng.standard_normal(shape) * 0.1).astype(np.float32)
            name = f"shared/{key}"
            self.inits.append(numpy_helper.from_array(data, name))
            self._shared[key] = name
        return self._shared[key]

    def conv(self, x: str, name: str) -> str:
        w = self.weight("conv3x3", (CHANNELS, CHANNELS, 3, 3))
        return self.op("Conv", [x, w], name, pads=[1, 1, 1, 1], kernel_shape=[3, 3])

    def resnet_block(self, x: str, scope: str) -> str:
        scale, bias = self.weight("bn_scale", (CHANNELS,)), self.weight("bn_bias", (CHANNELS,))
        mean, var = self.weight("bn_mean", (CHANNELS,)), self.weight("bn_var", (CHANNELS,))
        h = self.conv(x, f"{scope}/conv1")
        h = self.op("BatchNormalization", [h, scale, bias, mean, var], f"{scope}/bn1")
        h = self.op("Relu", [h], f"{scope}/relu1")
        h = self.conv(h, f"{scope}/conv2")
        h = self.op("BatchNormalization", [h, scale, bias, mean, var], f"{scope}/bn2")
        h = self.op("Add", [h, x], f"{scope}/add")
        return self.op("Relu", [h], f"{scope}/relu2")

    def transformer_block(self, x: str, scope: str) -> str:
        # Works on [1, C, H, W] viewed as tokens: MatMul over the last axis (W = C).
        w = self.weight("proj", (CHANNELS, CHANNELS))
        h = self.op("LayerNormalization", [x, self.weight("ln_scale", (CHANNELS,))], f"{scope}/ln1", axis=-1)
        q = self.op("MatMul", [h, w], f"{scope}/attn/q")
        k = self.op("MatMul", [h, w], f"{scope}/attn/k")
        v = self.op("MatMul", [h, w], f"{scope}/attn/v")
        kt = self.op("Transpose", [k], f"{scope}/attn/k_t", perm=[0, 1, 3, 2])
        s = self.op("MatMul", [q, kt], f"{scope}/attn/scores")
        p = self.op("Softmax", [s], f"{scope}/attn/softmax", axis=-1)
        a = self.op("MatMul", [p, v], f"{scope}/attn/context")
        o = self.op("MatMul", [a, w], f"{scope}/attn/out")
        h = self.op("Add", [x, o], f"{scope}/residual1")
        m = self.op("LayerNormalization", [h, self.weight("ln_scale", (CHANNELS,))], f"{scope}/ln2", axis=-1)
        m = self.op("MatMul", [m, w], f"{scope}/mlp/fc1")
        m = self.op("Gelu", [m], f"{scope}/mlp/gelu", domain="")
        m = self.op("MatMul", [m, w], f"{scope}/mlp/fc2")
        return self.op("Add", [h, m], f"{scope}/residual2")


def build_synthetic(n_nodes: int, seed: int = 7) -> onnx.ModelProto:
    """A model of about ``n_nodes`` nodes (within one block) mixing ResNet, transformer and U-Net shapes."""
    from onnx import TensorProto, helper

    b = _Builder(seed)
    x = "image"
    stage = 0
    skips: list[str] = []
    while len(b.nodes) < n_nodes:
        stage += 1
        kind = stage % 3
        for block in range(BLOCKS_PER_STAGE):
            if len(b.nodes) >= n_nodes:
                break
            scope = f"stage{stage}/block{block}"
            x = b.transformer_block(x, scope) if kind == 0 else b.resnet_block(x, scope)
        if kind == 1:
            skips.append(x)  # encoder side of a U-Net: remembered for a later stage
        elif kind == 2 and skips:
            x = b.op("Concat", [x, skips.pop()], f"stage{stage}/merge/concat", axis=1)
            x = b.op("Conv", [x, b.weight("conv_merge", (CHANNELS, 2 * CHANNELS, 1, 1))], f"stage{stage}/merge/conv")
    b.op("Identity", [x], "output")
    graph = helper.make_graph(
        b.nodes, f"synthetic_{n_nodes}",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, CHANNELS, CHANNELS, CHANNELS])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, CHANNELS, CHANNELS, CHANNELS])],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="studio-synthetic")
    model.ir_version = 9
    return model


def write_synthetic(path: Path, n_nodes: int, seed: int = 7) -> Path:
    """Build and save a synthetic model; returns the path."""
    import onnx

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(build_synthetic(n_nodes, seed), str(path))
    return path
