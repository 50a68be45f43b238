"""MACs of recurrent layers, attention and Einsum, checked against hand computations; ops with
no formula are reported as uncounted, never counted as one operation per output element."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from studio.tools.graph.macs import graph_macs
from studio.tools.graph.reader import read_model
from studio.tools.graph.summary import format_summary, summarize

SEQ, BATCH, IN, HIDDEN = 25, 2, 48, 64


def _weight(name, shape):
    return numpy_helper.from_array(np.random.default_rng(0).standard_normal(shape).astype(np.float32), name)


def _save(tmp_path, nodes, inputs, outputs, inits=(), name="m", opsets=(("", 17),)):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model = onnx.shape_inference.infer_shapes(model)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _recurrent(tmp_path, op, gates, direction):
    dirs = 2 if direction == "bidirectional" else 1
    node = helper.make_node(op, ["x", "W", "R"], ["y"], name=op.lower(), hidden_size=HIDDEN, direction=direction)
    return _save(tmp_path, [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, IN])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                 [_weight("W", [dirs, gates * HIDDEN, IN]), _weight("R", [dirs, gates * HIDDEN, HIDDEN])], op)


def test_recurrent_layers_count_every_step_by_hand(tmp_path):
    for op, gates, direction in (("LSTM", 4, "bidirectional"), ("GRU", 3, "forward"), ("RNN", 1, "reverse")):
        model = read_model(_recurrent(tmp_path, op, gates, direction))
        dirs = 2 if direction == "bidirectional" else 1
        # per step, per direction: W (gates*H x I) times x_t, R (gates*H x H) times h_{t-1}
        by_hand = SEQ * BATCH * dirs * (gates * HIDDEN * IN + gates * HIDDEN * HIDDEN)
        assert graph_macs(model.main)[op.lower()] == by_hand, op
    lstm = read_model(tmp_path / "LSTM.onnx")
    assert graph_macs(lstm.main)["lstm"] == 25 * 2 * 2 * 4 * 64 * (48 + 64) == 2_867_200  # not 6,400 outputs


def test_dynamic_quantize_lstm_uses_its_transposed_weights(tmp_path):
    # ONNX Runtime's quantized LSTM stores W as [dirs, input, 4*hidden]: the hidden size is the attribute
    node = helper.make_node("DynamicQuantizeLSTM", ["x", "W", "R", "", "", "", "", "", "ws", "wz", "rs", "rz"], ["y"],
                            name="qlstm", domain="com.microsoft", hidden_size=HIDDEN, direction="bidirectional")
    path = _save(tmp_path, [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, 1, IN])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SEQ, 2, 1, HIDDEN])],
                 [numpy_helper.from_array(np.zeros([2, IN, 4 * HIDDEN], np.int8), "W"),
                  numpy_helper.from_array(np.zeros([2, HIDDEN, 4 * HIDDEN], np.int8), "R")],
                 "qlstm", (("", 17), ("com.microsoft", 1)))
    assert graph_macs(read_model(path).main)["qlstm"] == SEQ * 1 * 2 * 4 * HIDDEN * (IN + HIDDEN)


def test_attention_ops_and_einsum_by_hand(tmp_path):
    b, s, d, heads, keys = 2, 10, 32, 4, 7
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("Attention", ["x", "Wqkv"], ["a"], name="attn", domain="com.microsoft", num_heads=heads),
        helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["m"], name="mha", domain="com.microsoft",
                         num_heads=heads),
        helper.make_node("Einsum", ["q", "k"], ["e"], name="einsum", equation="bsd,bkd->bsk"),
    ]
    inputs = [helper.make_tensor_value_info("x", f, [b, s, d]), helper.make_tensor_value_info("q", f, [b, s, d]),
              helper.make_tensor_value_info("k", f, [b, keys, d]), helper.make_tensor_value_info("v", f, [b, keys, d])]
    outputs = [helper.make_tensor_value_info(n, f, [b, s, d]) for n in ("a", "m")] + [
        helper.make_tensor_value_info("e", f, [b, s, keys])]
    path = _save(tmp_path, nodes, inputs, outputs, [_weight("Wqkv", [d, 3 * d])], "attn",
                 (("", 17), ("com.microsoft", 1)))
    macs = graph_macs(read_model(path).main)
    assert macs["attn"] == b * s * d * 3 * d + b * s * s * d + b * s * s * d  # QKV projections, QK^T, AV
    assert macs["mha"] == b * s * keys * d * 2  # QK^T and AV, no projections inside
    assert macs["einsum"] == b * s * keys * d  # output elements x the summed letter d
    einsum_out = np.einsum("bsd,bkd->bsk", np.ones([b, s, d]), np.ones([b, keys, d]))
    assert macs["einsum"] == einsum_out.size * einsum_out.max()  # each output sums d products


def test_an_op_with_no_formula_is_listed_as_uncounted(tmp_path):
    from studio.tools.graph.macs import left_out, macs_report, macs_text

    f = TensorProto.FLOAT
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("MysteryOp", ["r"], ["y"], name="mystery", domain="vendor.ops")]
    path = _save(tmp_path, nodes, [helper.make_tensor_value_info("x", f, [1, 8])],
                 [helper.make_tensor_value_info("y", f, [1, 8])], (), "custom", (("", 17), ("vendor.ops", 1)))
    model = read_model(path)
    # the custom op's output shape is declared: before, it silently counted 8 (one per output element)
    assert graph_macs(model.main) == {"relu": 8}
    assert left_out(model.main, graph_macs(model.main)) == (0, {"MysteryOp": 1})
    report = macs_report(model)
    assert report["uncounted"] == 1 and report["uncounted_ops"] == {"MysteryOp": 1} and report["unknown"] == 0
    assert macs_text(8, 0, {"MysteryOp": 1}) == "8 (uncounted, no formula: 1 MysteryOp)"
    assert "uncounted, no formula: 1 MysteryOp" in format_summary(summarize(model))
