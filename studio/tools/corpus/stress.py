"""Generated stress graphs: the shapes of real big models that break viewers and passes.

Each builder returns an ``onnx.ModelProto`` made with onnx.helper from a fixed seed, with real
weights small enough that ONNX Runtime runs the graph in well under a second. Node names carry
``/``-separated scopes the way exporters write them (``block12/conv1``), since that is what the
graph viewer groups by.
"""

from __future__ import annotations

import numpy as np


def _helpers():
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    return onnx, TensorProto, helper, numpy_helper


def _model(graph, opset: int = 17):
    onnx, _, helper, _ = _helpers()
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="studio-corpus")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def residual_10k(blocks: int = 1111):
    """A residual net of ``blocks`` sibling scopes ``block{i}/...`` of 9 nodes each (> 10,000 nodes)."""
    _, T, helper, nph = _helpers()
    rng = np.random.default_rng(10_000)
    c = 4
    inits = [nph.from_array((rng.standard_normal((c, c, 3, 3)) * 0.05).astype(np.float32), "w"),
             nph.from_array(np.zeros(c, np.float32), "b"),
             nph.from_array(np.full((1, c, 1, 1), 0.5, np.float32), "half")]
    nodes, x = [], "input"
    for i in range(blocks):
        p = f"block{i}/"
        nodes += [
            helper.make_node("Conv", [x, "w", "b"], [p + "c1"], name=p + "conv1", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", [p + "c1"], [p + "r1"], name=p + "relu1"),
            helper.make_node("Conv", [p + "r1", "w", "b"], [p + "c2"], name=p + "conv2", pads=[1, 1, 1, 1]),
            helper.make_node("Mul", [p + "c2", "half"], [p + "m"], name=p + "scale"),
            helper.make_node("Add", [p + "m", x], [p + "a"], name=p + "add"),
            helper.make_node("Relu", [p + "a"], [p + "r2"], name=p + "relu2"),
            helper.make_node("Sigmoid", [p + "r2"], [p + "g"], name=p + "gate"),
            helper.make_node("Mul", [p + "r2", p + "g"], [p + "s"], name=p + "swish"),
            helper.make_node("Mul", [p + "s", "half"], [p + "out"], name=p + "out"),
        ]
        x = p + "out"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["output"], name="head/pool"))
    graph = helper.make_graph(nodes, "residual_10k", [helper.make_tensor_value_info("input", T.FLOAT, [1, c, 8, 8])],
                              [helper.make_tensor_value_info("output", T.FLOAT, [1, c, 1, 1])], inits)
    return _model(graph)


def chain_100k(count: int = 100_000):
    """``count`` element-wise nodes in stages of 100 scopes of 100 (``stage{s}/block{b}/op{k}``)."""
    _, T, helper, nph = _helpers()
    inits = [nph.from_array(np.full((1, 8), 0.001, np.float32), "eps"),
             nph.from_array(np.full((1, 8), 0.999, np.float32), "decay")]
    nodes, x = [], "input"
    ops = ("Add", "Mul", "Relu", "Add", "Mul")
    for i in range(count):
        op = ops[i % len(ops)]
        name = f"stage{i // 10_000}/block{i // 100 % 100}/op{i % 100}"
        args = [x] if op == "Relu" else [x, "eps" if op == "Add" else "decay"]
        out = "output" if i == count - 1 else f"t{i}"
        nodes.append(helper.make_node(op, args, [out], name=name))
        x = out
    graph = helper.make_graph(nodes, "chain_100k", [helper.make_tensor_value_info("input", T.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("output", T.FLOAT, [1, 8])], inits)
    return _model(graph)


def fanout_5k(width: int = 5000):
    """One tensor read by ``width`` sibling nodes whose results are concatenated."""
    _, T, helper, nph = _helpers()
    rng = np.random.default_rng(5000)
    scales = (rng.standard_normal((width, 1, 8)) * 0.1 + 1).astype(np.float32)
    inits = [nph.from_array(scales[i], f"k{i}") for i in range(width)]
    nodes = [helper.make_node("Mul", ["input", f"k{i}"], [f"b{i}"], name=f"branch{i}") for i in range(width)]
    nodes.append(helper.make_node("Concat", [f"b{i}" for i in range(width)], ["output"], name="gather/concat", axis=0))
    graph = helper.make_graph(nodes, "fanout_5k", [helper.make_tensor_value_info("input", T.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("output", T.FLOAT, [width, 8])], inits)
    return _model(graph)


def transformer_24(layers: int = 24, hidden: int = 64, heads: int = 4, seq: int = 16):
    """``layers`` identical post-norm encoder layers (attention + GELU MLP), BERT-style names."""
    _, T, helper, nph = _helpers()
    rng = np.random.default_rng(24)
    head = hidden // heads
    inits, nodes = [], []

    def w(name, shape, scale=0.05):
        inits.append(nph.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def c(name, value):
        inits.append(nph.from_array(np.asarray(value), name))
        return name

    c("split_shape", np.array([1, seq, heads, head], np.int64))
    c("merge_shape", np.array([1, seq, hidden], np.int64))
    c("inv_sqrt_d", np.array(1 / np.sqrt(head), np.float32))
    c("sqrt2", np.array(np.sqrt(2), np.float32))
    c("one", np.array(1, np.float32))
    c("halfc", np.array(0.5, np.float32))
    x = "input"
    for i in range(layers):
        p = f"encoder/layer.{i}/"

        def n(op, ins, out, **attrs):
            nodes.append(helper.make_node(op, ins, [p + out], name=p + out, **attrs))
            return p + out

        heads_of = {}
        for q in ("query", "key", "value"):
            mm = n("MatMul", [x, w(p + q + ".weight", (hidden, hidden))], f"attention/self/{q}/MatMul")
            r = n("Reshape", [mm, "split_shape"], f"attention/self/{q}/Reshape")
            perm = [0, 2, 3, 1] if q == "key" else [0, 2, 1, 3]
            heads_of[q] = n("Transpose", [r], f"attention/self/{q}/Transpose", perm=perm)
        s = n("MatMul", [heads_of["query"], heads_of["key"]], "attention/self/scores")
        s = n("Mul", [s, "inv_sqrt_d"], "attention/self/scale")
        s = n("Softmax", [s], "attention/self/Softmax", axis=-1)
        ctx = n("MatMul", [s, heads_of["value"]], "attention/self/context")
        ctx = n("Transpose", [ctx], "attention/self/merge/Transpose", perm=[0, 2, 1, 3])
        ctx = n("Reshape", [ctx, "merge_shape"], "attention/self/merge/Reshape")
        o = n("MatMul", [ctx, w(p + "attn_out.weight", (hidden, hidden))], "attention/output/dense")
        o = n("Add", [o, x], "attention/output/residual")
        x1 = n("LayerNormalization", [o, c(p + "ln1.g", np.ones(hidden, np.float32)),
                                      c(p + "ln1.b", np.zeros(hidden, np.float32))], "attention/output/LayerNorm",
               axis=-1)
        h = n("MatMul", [x1, w(p + "fc1.weight", (hidden, 4 * hidden))], "intermediate/dense")
        g = n("Div", [h, "sqrt2"], "intermediate/gelu/Div")
        g = n("Erf", [g], "intermediate/gelu/Erf")
        g = n("Add", [g, "one"], "intermediate/gelu/Add")
        g = n("Mul", [h, g], "intermediate/gelu/Mul")
        g = n("Mul", [g, "halfc"], "intermediate/gelu/Half")
        f = n("MatMul", [g, w(p + "fc2.weight", (4 * hidden, hidden))], "output/dense")
        f = n("Add", [f, x1], "output/residual")
        x = n("LayerNormalization", [f, c(p + "ln2.g", np.ones(hidden, np.float32)),
                                     c(p + "ln2.b", np.zeros(hidden, np.float32))], "output/LayerNorm", axis=-1)
    nodes.append(helper.make_node("Identity", [x], ["output"], name="encoder/output"))
    graph = helper.make_graph(nodes, "transformer_24",
                              [helper.make_tensor_value_info("input", T.FLOAT, [1, seq, hidden])],
                              [helper.make_tensor_value_info("output", T.FLOAT, [1, seq, hidden])], inits)
    return _model(graph)


BUILDERS = {"residual_10k": residual_10k, "chain_100k": chain_100k, "fanout_5k": fanout_5k,
            "transformer_24": transformer_24}
