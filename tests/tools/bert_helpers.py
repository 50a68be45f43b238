"""A small BERT encoder written the way PyTorch's exporter writes one (seeded weights).

Dynamic ``batch`` and ``seq`` on three int64 inputs (input_ids, attention_mask, token_type_ids).
Sizes are computed inside the graph as exports do: position ids are a Slice of a buffer up to
``Shape(input_ids)[1]``, expanded to ``[batch, -1]`` through ConstantOfShape / Equal / Where, and
every head split and merge reshapes to a Concat of Gathers of Shape. The weights' shapes give the
MACs by hand (:func:`matmul_macs_by_hand`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class BertSize:
    vocab: int = 100
    types: int = 2
    positions: int = 64
    hidden: int = 32
    heads: int = 4
    intermediate: int = 64
    layers: int = 2


class _Builder:
    def __init__(self, rng):
        self.nodes, self.weights, self.rng, self.count = [], [], rng, 0

    def weight(self, name, array):
        from onnx import numpy_helper

        self.weights.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def const(self, values, dtype=np.int64):
        return self.weight(f"const_{len(self.weights)}", np.array(values, dtype))

    def node(self, op, inputs, name, **attrs):
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [f"{name}_out"], name=name, **attrs))
        return f"{name}_out"

    def dim(self, tensor, axis, name):
        """``Unsqueeze(Gather(Shape(tensor), axis))``: one dim as a 1-D tensor, as exports write it."""
        shape = self.node("Shape", [tensor], f"{name}/Shape")
        dim = self.node("Gather", [shape, self.const(axis)], f"{name}/Gather", axis=0)
        return self.node("Unsqueeze", [dim, self.const([0])], f"{name}/Unsqueeze")

    def linear(self, x, k, n, name):
        w = self.weight(f"{name}.weight", self.rng.standard_normal((k, n)).astype(np.float32) * 0.1)
        b = self.weight(f"{name}.bias", np.zeros(n, np.float32))
        return self.node("Add", [self.node("MatMul", [x, w], f"{name}/MatMul"), b], f"{name}/Add")

    def layer_norm(self, x, width, name):
        g = self.weight(f"{name}.weight", np.ones(width, np.float32))
        b = self.weight(f"{name}.bias", np.zeros(width, np.float32))
        return self.node("LayerNormalization", [x, g, b], name, axis=-1, epsilon=1e-12)


def build_bert(path: Path, size: BertSize = BertSize(), seed: int = 0) -> Path:
    """Write the encoder to ``path`` (opset 17) and return it."""
    import onnx
    from onnx import TensorProto, helper

    s, b = size, _Builder(np.random.default_rng(seed))
    head = s.hidden // s.heads
    ids, mask, types = "input_ids", "attention_mask", "token_type_ids"
    emb = lambda name, rows: b.weight(name, b.rng.standard_normal((rows, s.hidden)).astype(np.float32))  # noqa: E731
    word, pos_table, type_table = emb("word_embeddings", s.vocab), emb("position_embeddings", s.positions), \
        emb("token_type_embeddings", s.types)
    buffer = b.weight("position_ids", np.arange(s.positions, dtype=np.int64)[None])
    # position ids: buffer[:, :seq], expanded to [batch, -1] with the Where chain exports write
    seq = b.dim(ids, 1, "pos/seq")
    pos = b.node("Slice", [buffer, b.const([0]), seq, b.const([1])], "pos/Slice")
    target = b.node("Concat", [b.dim(ids, 0, "pos/batch"), b.const([-1])], "pos/Concat", axis=0)
    ones = b.node("ConstantOfShape", [b.node("Shape", [target], "pos/Shape")], "pos/ConstantOfShape",
                  value=helper.make_tensor("one", TensorProto.INT64, [1], [1]))
    is_free = b.node("Equal", [target, b.const([-1, -1])], "pos/Equal")
    pos = b.node("Expand", [pos, b.node("Where", [is_free, ones, target], "pos/Where")], "pos/Expand")
    x = b.node("Add", [b.node("Gather", [word, ids], "emb/word/Gather"),
                       b.node("Gather", [type_table, types], "emb/type/Gather")], "emb/Add")
    x = b.node("Add", [x, b.node("Gather", [pos_table, pos], "emb/pos/Gather")], "emb/Add_1")
    x = b.layer_norm(x, s.hidden, "emb/LayerNorm")
    m = b.node("Cast", [b.node("Unsqueeze", [mask, b.const([1, 2])], "mask/Unsqueeze")], "mask/Cast", to=TensorProto.FLOAT)
    m = b.node("Mul", [b.node("Sub", [b.const(1.0, np.float32), m], "mask/Sub"), b.const(-10000.0, np.float32)],
               "mask/Mul")
    for layer in range(s.layers):
        p = f"layer.{layer}"
        q, k, v = (b.linear(x, s.hidden, s.hidden, f"{p}/{n}") for n in ("query", "key", "value"))

        def heads(t, perm, name):
            shape = b.node("Concat", [b.dim(t, 0, f"{name}/b"), b.dim(t, 1, f"{name}/s"), b.const([s.heads]),
                                      b.const([head])], f"{name}/Concat", axis=0)
            return b.node("Transpose", [b.node("Reshape", [t, shape], f"{name}/Reshape")], f"{name}/Transpose",
                          perm=perm)

        qh, kh, vh = heads(q, [0, 2, 1, 3], f"{p}/q"), heads(k, [0, 2, 3, 1], f"{p}/k"), heads(v, [0, 2, 1, 3], f"{p}/v")
        scores = b.node("Div", [b.node("MatMul", [qh, kh], f"{p}/scores/MatMul"), b.const(float(np.sqrt(head)), np.float32)],
                        f"{p}/scores/Div")
        probs = b.node("Softmax", [b.node("Add", [scores, m], f"{p}/scores/Add")], f"{p}/Softmax", axis=-1)
        ctx = b.node("Transpose", [b.node("MatMul", [probs, vh], f"{p}/context/MatMul")], f"{p}/context/Transpose",
                     perm=[0, 2, 1, 3])
        merged = b.node("Concat", [b.dim(ctx, 0, f"{p}/merge/b"), b.dim(ctx, 1, f"{p}/merge/s"), b.const([s.hidden])],
                        f"{p}/merge/Concat", axis=0)
        ctx = b.node("Reshape", [ctx, merged], f"{p}/merge/Reshape")
        x = b.layer_norm(b.node("Add", [b.linear(ctx, s.hidden, s.hidden, f"{p}/output"), x], f"{p}/residual/Add"),
                         s.hidden, f"{p}/attention/LayerNorm")
        h = b.linear(x, s.hidden, s.intermediate, f"{p}/intermediate")
        erf = b.node("Erf", [b.node("Div", [h, b.const(float(np.sqrt(2)), np.float32)], f"{p}/gelu/Div")], f"{p}/gelu/Erf")
        gelu = b.node("Mul", [b.node("Mul", [h, b.node("Add", [erf, b.const(1.0, np.float32)], f"{p}/gelu/Add")],
                                     f"{p}/gelu/Mul"), b.const(0.5, np.float32)], f"{p}/gelu/Mul_1")
        out = b.linear(gelu, s.intermediate, s.hidden, f"{p}/ffn_out")
        x = b.layer_norm(b.node("Add", [out, x], f"{p}/ffn/Add"), s.hidden, f"{p}/output/LayerNorm")
    dims = ["batch", "seq"]
    graph = helper.make_graph(
        b.nodes, "bert",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in (ids, mask, types)],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "seq", s.hidden])], b.weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return Path(path)


def matmul_macs_by_hand(path: Path, batch: int, seq: int, heads: int) -> int:
    """MACs of every MatMul, from the weights in the file and the sequence length: each weight
    ``[k, n]`` multiplies ``batch x seq`` rows (``m x n x k``); each layer's two attention products
    are ``batch x heads`` matrices of ``seq x seq x head`` (the head width from the query weight)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    total, layers, hidden = 0, 0, None
    for node in model.graph.node:
        if node.op_type != "MatMul":
            continue
        w = weights.get(node.input[1])
        if w is not None and w.ndim == 2:
            k, n = w.shape
            total += batch * seq * n * k
            if "query" in node.name:
                layers, hidden = layers + 1, n
    return total + layers * 2 * batch * heads * seq * seq * (hidden // heads)
