"""MACs of a BERT encoder exported the PyTorch way, checked against the weights' shapes by hand and
against the tensor shapes of a real ONNX Runtime run."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bert_helpers import BertSize, build_bert, matmul_macs_by_hand
from studio.core.jobs import run_job
from studio.tools.graph.macs import graph_macs, macs_report
from studio.tools.graph.reader import read_model
from studio.tools.graph.shapes import apply_input_shapes

BATCH, SEQ = 1, 16  # batch 1, as inference runs: ONNX inference alone then loses the batch dim
SIZES = {"input_ids": (BATCH, SEQ), "attention_mask": (BATCH, SEQ), "token_type_ids": (BATCH, SEQ)}
# the test's own lists: ops that compute one result per output element, ops that only move elements
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Erf", "Softmax", "LayerNormalization", "Equal", "Where"}
MOVES = {"Gather", "Concat", "Transpose", "Slice", "Expand", "ConstantOfShape", "Cast"}


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return build_bert(tmp_path_factory.mktemp("bert") / "bert.onnx")


def _ort_shapes(path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape in one ONNX Runtime run (valid ids, a mask of ones)."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(path))
    declared = {o.name for o in model.graph.output}
    model.graph.output.extend(onnx.ValueInfoProto(name=o) for n in model.graph.node for o in n.output
                              if o not in declared)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    feeds = {"input_ids": rng.integers(0, BertSize().vocab, (BATCH, SEQ)), "attention_mask": np.ones((BATCH, SEQ)),
             "token_type_ids": rng.integers(0, 2, (BATCH, SEQ))}
    names = [o.name for o in session.get_outputs()]
    outs = session.run(names, {k: v.astype(np.int64) for k, v in feeds.items()})
    return {name: tuple(np.shape(v)) for name, v in zip(names, outs)}


def _nodes(path):
    import onnx

    return list(onnx.load(str(path)).graph.node)


def test_given_sizes_size_every_matmul_of_a_bert(bert):
    model = read_model(bert)
    apply_input_shapes(model, SIZES)
    report = macs_report(model, top=1000)
    assert report["unknown"] == 0 and report["uncounted"] == 0  # was 65 nodes unknown
    macs = graph_macs(model.main)
    nodes, ort = _nodes(bert), _ort_shapes(bert)
    matmuls = [n for n in nodes if n.op_type == "MatMul"]
    by_hand = matmul_macs_by_hand(bert, BATCH, SEQ, BertSize().heads)
    assert sum(macs[n.name] for n in matmuls) == by_hand == 2 * (4 * 16 * 32 * 32 + 2 * 16 * 32 * 64 + 2 * 4 * 16 * 16 * 8)
    for n in matmuls:  # each one against the shapes the run produced
        assert macs[n.name] == int(np.prod(ort[n.output[0]])) * ort[n.input[0]][-1], n.name
    elementwise = sum(int(np.prod(ort[n.output[0]])) for n in nodes if n.op_type in ELEMENTWISE)
    assert report["total"] == pytest.approx(by_hand + elementwise, rel=0.01)  # was 1,640


def test_data_movement_is_reported_apart_not_as_macs(bert):
    model = read_model(bert)
    apply_input_shapes(model, SIZES)
    macs = graph_macs(model.main)
    nodes, ort = _nodes(bert), _ort_shapes(bert)
    moving = [n for n in nodes if n.op_type in MOVES]
    assert moving and all(macs.get(n.name) == 0 for n in moving)  # a Transpose was one MAC per element
    from studio.tools.graph.macs import moved_report

    moved = moved_report(model.main)
    assert moved["unknown"] == 0 and moved["nodes"] == len(moving)
    assert moved["elements"] == sum(int(np.prod(ort[n.output[0]])) for n in moving)
    assert moved["ops"]["Transpose"] == 8 and moved["ops"]["Gather"] == sum(n.op_type == "Gather" for n in nodes)


def test_run_shapes_feeds_ids_the_tables_accept_and_says_so(bert):
    import onnx

    from studio.tools.graph.run_feeds import feed, table_rows
    from studio.tools.graph.runtime_shapes import record_shapes

    rows = table_rows(onnx.load(str(bert)))
    assert rows == {"input_ids": (100, "word_embeddings"), "token_type_ids": (2, "token_type_embeddings")}
    ids, said = feed("token_type_ids", [64, 64], np.int64, np.random.default_rng(0), rows["token_type_ids"])
    assert set(np.unique(ids)) == {0, 1} and "[0, 1]" in said
    mask, said = feed("attention_mask", [2, 3], np.int64, np.random.default_rng(0), None)
    assert (mask == 1).all() and "ones" in said
    fed: dict[str, str] = {}
    shapes, _ = run_job(record_shapes(bert, input_shapes=SIZES, fed=fed))  # random [0, 10) ids failed here
    ort = _ort_shapes(bert)
    assert all(shapes[name] == shape for name, shape in ort.items())
    assert "[0, 99]" in fed["input_ids"] and "[0, 1]" in fed["token_type_ids"] and "ones" in fed["attention_mask"]


def test_cli_run_shapes_on_a_bert_counts_what_the_given_sizes_count(bert):
    def macs(*extra):
        args = [a for name, dims in SIZES.items() for a in ("--input-shape", f"{name}={dims[0]},{dims[1]}")]
        proc = subprocess.run([sys.executable, "-m", "studio", "graph", "macs", str(bert), *args, *extra, "--json"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    given, run = macs(), macs("--run-shapes")
    assert run["total"] == given["total"] and run["unknown"] == 0
    assert "token_type_ids: random ids in [0, 1]" in run["shapes"] and "attention_mask: ones" in run["shapes"]
    assert run["run_fed"]["input_ids"].startswith("random ids in [0, 99]")


def test_declared_symbolic_dims_give_way_to_the_given_sizes(tmp_path):
    """Paddle exports declare every tensor ``[DynamicDimension.0, ...]`` in value_info and outputs;
    with the size given, inference's sizes replace those declarations (they kept one Softmax unknown)."""
    import onnx
    from onnx import TensorProto, helper

    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Softmax", ["r"], ["y"], name="softmax")],
        "g", [helper.make_tensor_value_info("x", f, ["N", 4])], [helper.make_tensor_value_info("y", f, ["N", 4])],
        value_info=[helper.make_tensor_value_info(n, f, ["N", 4]) for n in ("r", "y")])
    path = tmp_path / "declared.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    model = read_model(path)
    apply_input_shapes(model, {"x": (3, 4)})
    assert model.main.value("y").shape == (3, 4) and model.main.value("r").shape == (3, 4)
    assert graph_macs(model.main) == {"relu": 12, "softmax": 12}


def test_ids_indexing_an_int8_table_are_fed_within_its_rows():
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from studio.tools.graph.run_feeds import table_rows

    table = numpy_helper.from_array(np.zeros((37, 8), np.int8), "table_q")
    scale = numpy_helper.from_array(np.array(0.1, np.float32), "scale")
    graph = helper.make_graph(
        [helper.make_node("Cast", ["table_q"], ["table_f"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["scale", "table_f"], ["table"]),
         helper.make_node("Gather", ["table", "ids"], ["y"])],
        "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, 8])], [table, scale])
    assert table_rows(helper.make_model(graph)) == {"ids": (37, "table_q")}
