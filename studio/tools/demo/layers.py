"""A tiny, seeded graph builder over ``onnx.helper`` for the demo models.

Naming convention (later tools group nodes by these ``/``-separated prefixes, so keep to it):

* every node name is a full path whose last segment is the lower-case op kind, e.g.
  ``encoder1/conv1/conv``, ``encoder1/conv1/bn``, ``decoder2/up/resize``, ``head_box_2/conv``;
* a node's output tensor has the node's name, unless the caller names it (graph outputs);
* initializers are ``<node name>/<role>``, e.g. ``encoder1/conv1/conv/weight``.

Weights come from one ``numpy.random.Generator`` seeded at construction, drawn in call order, so
the same sequence of calls always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # onnx is imported lazily at run time to keep `import studio` cheap.
    import onnx

OPSET = 13
# IR 7 is the IR version that came with opset 13 (ONNX 1.8); older consumers such as ATC expect it.
IR_VERSION = 7


class GraphBuilder:
    """Accumulates nodes, initializers and graph inputs/outputs for one model.

    The builder tracks the channel count of every NCHW tensor it creates so that layer methods
    only need the output width. Methods return the name of the tensor they produced.
    """

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.initializers: list = []
        self.inputs: list = []
        self.outputs: list = []
        self._channels: dict[str, int | None] = {}

    # -- plumbing ---------------------------------------------------------------------------

    def input(self, name: str, shape: Sequence[int]) -> str:
        """Declare a float32 graph input of a fixed NCHW (or other) shape."""
        from onnx import TensorProto, helper

        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        self._channels[name] = shape[1] if len(shape) > 1 else None
        return name

    def output(self, name: str, shape: Sequence[int]) -> None:
        """Declare an existing float32 tensor as a graph output of the given shape."""
        from onnx import TensorProto, helper

        if name not in self._channels:
            raise KeyError(f"no tensor named {name!r} to expose as an output")
        self.outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))

    def constant(self, name: str, array: np.ndarray) -> str:
        """Add an initializer (float arrays are stored as float32, ints as given)."""
        from onnx import numpy_helper

        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def channels(self, x: str) -> int:
        """The channel count (dim 1) of a tensor this builder made."""
        ch = self._channels.get(x)
        if ch is None:
            raise ValueError(f"channel count of {x!r} is unknown")
        return ch

    def _node(self, op: str, inputs: Sequence[str], name: str, channels: int | None,
              output: str | None = None, **attrs) -> str:
        from onnx import helper

        out = output or name
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=name, **attrs))
        self._channels[out] = channels
        return out

    # -- layers -----------------------------------------------------------------------------

    def conv(self, x: str, out_ch: int, k: int = 3, stride: int = 1, *, name: str,
             dilation: int = 1, gain: float = 2.0, bias: bool = True, centered: bool = True,
             output: str | None = None) -> str:
        """Conv with "same" padding (for stride 1) and He-normal weights.

        ``gain`` is 2 for a conv followed by ReLU (He) and 1 for a linear output layer, so the
        second moment of activations stays roughly constant from layer to layer.

        ``centered`` (the default) makes each filter sum to zero, as weight standardisation
        does. ReLU features have a positive mean; a random filter turns it into a large
        per-channel offset that BatchNorm's made-up statistics cannot remove, so deep layers
        would drift and a softmax head would pick one class everywhere. A centred filter only
        sees the input's variance, (1/2 - 1/2pi) of a ReLU's second moment instead of 1/2, so
        its scale is raised by 1/sqrt(1 - 1/pi) to keep activations at the same level.
        """
        in_ch = self.channels(x)
        fan_in = in_ch * k * k
        weight = self.rng.standard_normal((out_ch, in_ch, k, k)) * np.sqrt(gain / fan_in)
        if centered:
            weight -= weight.mean(axis=(1, 2, 3), keepdims=True)
            weight /= np.sqrt(1.0 - 1.0 / np.pi)
        inputs = [x, self.constant(f"{name}/weight", weight)]
        if bias:
            inputs.append(self.constant(f"{name}/bias", self.rng.normal(0.0, 0.02, out_ch)))
        pad = dilation * (k - 1) // 2
        return self._node("Conv", inputs, name, out_ch, output, kernel_shape=[k, k],
                          strides=[stride, stride], pads=[pad] * 4, dilations=[dilation] * 2)

    def conv_transpose(self, x: str, out_ch: int, k: int = 2, stride: int = 2, *,
                       name: str) -> str:
        """Learned up-sampling: ConvTranspose with kernel == stride doubles H and W exactly."""
        in_ch = self.channels(x)
        # Each output pixel sees in_ch * (k/stride)^2 inputs; with k == stride that is in_ch.
        fan_in = in_ch * (k // stride) ** 2
        weight = self.rng.standard_normal((in_ch, out_ch, k, k)) * np.sqrt(2.0 / fan_in)
        bias = self.rng.normal(0.0, 0.02, out_ch)
        inputs = [x, self.constant(f"{name}/weight", weight), self.constant(f"{name}/bias", bias)]
        return self._node("ConvTranspose", inputs, name, out_ch, kernel_shape=[k, k],
                          strides=[stride, stride])

    def batch_norm(self, x: str, *, name: str) -> str:
        """Inference BatchNorm with realistic, non-identity statistics.

        Scale ~1, bias ~0, running mean ~0 and variance ~1 but all jittered per channel, so a
        converter that folds BN into the previous Conv has real arithmetic to get right, while
        the layer still roughly preserves the scale of He-initialised activations.
        """
        ch = self.channels(x)
        scale = self.rng.normal(1.0, 0.1, ch)
        bias = self.rng.normal(0.0, 0.05, ch)
        mean = self.rng.normal(0.0, 0.1, ch)
        var = self.rng.uniform(0.75, 1.25, ch)
        inputs = [x] + [self.constant(f"{name}/{role}", arr) for role, arr in
                        (("scale", scale), ("bias", bias), ("mean", mean), ("var", var))]
        return self._node("BatchNormalization", inputs, name, ch, epsilon=1e-5)

    def relu(self, x: str, *, name: str) -> str:
        """Elementwise ReLU."""
        return self._node("Relu", [x], name, self._channels.get(x))

    def conv_bn_relu(self, x: str, out_ch: int, k: int = 3, stride: int = 1, *, scope: str,
                     dilation: int = 1) -> str:
        """Conv (no bias, as BN follows) + BatchNorm + ReLU as ``scope/conv|bn|relu``."""
        y = self.conv(x, out_ch, k, stride, name=f"{scope}/conv", dilation=dilation, bias=False)
        y = self.batch_norm(y, name=f"{scope}/bn")
        return self.relu(y, name=f"{scope}/relu")

    def max_pool(self, x: str, k: int = 2, stride: int = 2, *, name: str) -> str:
        """MaxPool without padding (halves even H, W for k = stride = 2)."""
        return self._node("MaxPool", [x], name, self._channels.get(x), kernel_shape=[k, k],
                          strides=[stride, stride])

    def resize_2x(self, x: str, *, name: str) -> str:
        """Nearest-neighbour 2x up-sampling, opset-13 Resize with an empty roi and scales.

        The attributes match what PyTorch exports for ``nn.Upsample(mode="nearest")``, the form
        ATC and most runtimes handle best.
        """
        roi = self.constant(f"{name}/roi", np.zeros((0,), np.float32))
        scales = self.constant(f"{name}/scales", np.array([1, 1, 2, 2], np.float32))
        return self._node("Resize", [x, roi, scales], name, self._channels.get(x),
                          mode="nearest", coordinate_transformation_mode="asymmetric",
                          nearest_mode="floor")

    def concat(self, xs: Sequence[str], axis: int = 1, *, name: str,
               output: str | None = None) -> str:
        """Concat; channel count is tracked only for axis 1 of NCHW tensors."""
        known = [self._channels.get(x) for x in xs]
        ch = sum(known) if axis == 1 and None not in known else None
        return self._node("Concat", xs, name, ch, output, axis=axis)

    def softmax(self, x: str, axis: int = 1, *, name: str, output: str | None = None) -> str:
        """Softmax over one axis (opset 13 semantics: a single axis, not flattened)."""
        return self._node("Softmax", [x], name, self._channels.get(x), output, axis=axis)

    def global_avg_pool(self, x: str, *, name: str) -> str:
        """GlobalAveragePool: N,C,H,W -> N,C,1,1."""
        return self._node("GlobalAveragePool", [x], name, self._channels.get(x))

    def flatten(self, x: str, *, name: str) -> str:
        """Flatten to N x features (features == channels after a global pool)."""
        return self._node("Flatten", [x], name, self._channels.get(x), axis=1)

    def gemm(self, x: str, out_features: int, *, name: str, output: str | None = None) -> str:
        """Fully connected layer, weights stored [out, in] with transB=1 like PyTorch."""
        in_features = self.channels(x)
        weight = self.rng.standard_normal((out_features, in_features)) * np.sqrt(1.0 / in_features)
        bias = self.rng.normal(0.0, 0.02, out_features)
        inputs = [x, self.constant(f"{name}/weight", weight), self.constant(f"{name}/bias", bias)]
        return self._node("Gemm", inputs, name, out_features, output, transB=1)

    def classifier_head(self, x: str, classes: int) -> None:
        """The usual image-classifier head on an N,C,H,W map: global average pool, flatten, a fully
        connected layer to ``classes`` and a softmax, written as the model's output ``probabilities``
        [1, classes] (nodes under ``head/``)."""
        x = self.global_avg_pool(x, name="head/pool")
        x = self.flatten(x, name="head/flatten")
        x = self.gemm(x, classes, name="head/gemm")
        x = self.softmax(x, axis=1, name="head/softmax", output="probabilities")
        self.output(x, [1, classes])

    def reshape(self, x: str, shape: Sequence[int], *, name: str) -> str:
        """Reshape to a constant target shape (int64 initializer)."""
        target = self.constant(f"{name}/shape", np.array(shape, np.int64))
        return self._node("Reshape", [x, target], name, None)

    def transpose(self, x: str, perm: Sequence[int], *, name: str) -> str:
        """Transpose with an explicit permutation."""
        return self._node("Transpose", [x], name, None, perm=list(perm))

    def tanh(self, x: str, *, name: str) -> str:
        """Elementwise Tanh."""
        return self._node("Tanh", [x], name, self._channels.get(x))

    def mul_scalar(self, x: str, value: float, *, name: str, output: str | None = None) -> str:
        """Multiply by a float32 scalar constant."""
        factor = self.constant(f"{name}/factor", np.array(value, np.float32))
        return self._node("Mul", [x, factor], name, self._channels.get(x), output)

    # -- result -----------------------------------------------------------------------------

    def make_model(self, graph_name: str, doc: str) -> onnx.ModelProto:
        """Assemble, shape-infer and fully check the model (opset 13, IR 7)."""
        import onnx
        from onnx import helper

        graph = helper.make_graph(self.nodes, graph_name, self.inputs, self.outputs,
                                  initializer=self.initializers, doc_string=doc)
        model = helper.make_model(graph, producer_name="studio-demo", doc_string=doc,
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        # Record intermediate shapes so viewers can show them without running inference.
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        onnx.checker.check_model(model, full_check=True)
        return model
