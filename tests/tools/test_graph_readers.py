"""Graph readers on generated ONNX models and on the real OM fixtures."""

from __future__ import annotations

import json

import numpy as np
import pytest
from graph_helpers import feature_model

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.graph.reader import read_graph, read_model
from studio.tools.graph.summary import summarize
from studio.tools.graph.synthetic import write_synthetic


def test_onnx_features(tmp_path):
    model = read_model(feature_model(tmp_path))
    main = model.main
    assert [n.type for n in main.nodes] == ["MatMul", "If", "Loop", "Swish"]
    by_name = {n.name: n for n in main.nodes}
    assert set(by_name["gate/if"].subgraphs) == {"then_branch", "else_branch"}
    assert [n.type for n in by_name["repeat/loop"].subgraphs["body"].nodes] == ["Identity", "Add"]
    swish = by_name["head/swish"]
    assert swish.domain == "custom" and [n.type for n in swish.subgraphs["function"].nodes] == ["Sigmoid", "Mul"]
    assert model.opsets == {"ai.onnx": 17, "custom": 1}
    assert model.metadata["meta:author"] == "tests"
    # dynamic dims survive as their symbolic names
    assert main.value("x").shape == ("batch", 8) and main.value("x").dtype == "float32"
    assert main.inputs == ["x", "cond"]
    # external data: resolved next to the model, statistics on demand
    weight = main.initializers["dense/weight"]
    assert weight.location == "features.weights" and weight.shape == (8, 8)
    stats = weight.statistics()
    assert stats["min"] == 0 and stats["max"] == 63 and stats["elements"] == 64
    assert stats["sparsity"] == pytest.approx(1 / 64)
    summary = summarize(model)
    assert summary["nodes"] == 4
    assert summary["nodes_total"] == 4 + 1 + 1 + 2 + 2  # main, then, else, loop body, function
    assert summary["subgraphs"] == 4
    assert summary["parameters"] == 64 + 1
    assert summary["edges"] == 3
    json.dumps(summary, default=str)


def test_missing_external_data_is_named(tmp_path):
    path = feature_model(tmp_path)
    (tmp_path / "features.weights").unlink()
    model = read_model(path)
    assert any("features.weights" in w and "not found" in w for w in model.warnings)
    assert "not found" in model.main.initializers["dense/weight"].statistics()["error"]


def test_shape_inference_failure_is_a_warning(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    # MatMul of [2,3] by [4,5] cannot be inferred; reading still succeeds.
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"], name="mm")], "bad",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 5])],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)])
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    model = read_model(path)
    assert len(model.main.nodes) == 1
    assert any("shape inference failed" in w for w in model.warnings)


def test_truncated_onnx_is_a_clear_error(tmp_path):
    path = write_synthetic(tmp_path / "syn.onnx", 300)
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(UserError) as err:
        read_model(cut)
    assert "cut.onnx" in str(err.value) and "fix" in str(err.value)


def test_synthetic_model_read_as_a_job(tmp_path):
    path = write_synthetic(tmp_path / "syn.onnx", 500)
    model = run_job(read_graph(path))
    ops = {n.type for n in model.main.nodes}
    assert {"Conv", "MatMul", "Softmax", "Add", "Concat"} <= ops
    src, dst, _ = model.main.edges()
    assert src.size > len(model.main.nodes)  # skips and branches add edges
    assert np.all(src != dst)


# ---------------------------------------------------------------- real OM fixtures
def test_om_root_model(ascend_fixtures):
    model = read_model(ascend_fixtures / "om" / "root_model.om")
    assert model.format == "om" and model.metadata["om_name"] == "test_graph_cache"
    assert [n.type for n in model.main.nodes] == ["NetOutput", "Data", "FakeOpNpu"]
    assert model.main.inputs == ["_arg_0:0"]
    value = model.main.value("_arg_0:0")
    assert (value.dtype, value.shape, value.format) == ("int32", (16,), "ND")
    assert summarize(model)["edges"] == 2


def test_om_multi_model_with_subgraphs(ascend_fixtures):
    model = read_model(ascend_fixtures / "om" / "dynamic_and_static_graph_without_unfold.om")
    assert model.metadata["model_num"] == 3 and model.metadata["dynamic"] is True
    assert [g.name for g in model.graphs] == ["model0/root", "model1/sub_1", "model2/sub_2"]
    calls = [n for n in model.main.nodes if n.type == "PartitionedCall"]
    assert {c.subgraphs["subgraph_0"].name for c in calls} == {"sub_1", "sub_2"}
    add = next(n for g in model.all_graphs() for n in g.nodes if n.type == "Add")
    assert add.inputs == ["data_i:0", "const_1:0"]
    # Const ops become weights with their data from the model
    const = next(g for g in model.all_graphs() if "const_1:0" in g.initializers).initializers["const_1:0"]
    assert "min" in const.statistics()
    # compressed attribute keys were looked up in the model's name table (no raw \0 keys remain)
    assert not any(k.startswith("\0") for g in model.all_graphs() for n in g.nodes for k in n.attributes)


def test_om_flow_model_reads_its_submodels(ascend_fixtures):
    model = read_model(ascend_fixtures / "om" / "flow_model.om")
    assert model.metadata["model_type"] == "flow model"
    assert [s["device"] for s in model.metadata["flow_submodels"]] == ["NPU", "HOST_CPU"]
    assert [g.name for g in model.graphs] == ["root_graph", "graph1/graph1", "graph2/graph2"]


def test_not_an_om_is_refused(ascend_fixtures):
    with pytest.raises(UserError) as err:
        read_model(ascend_fixtures / "om" / "not_an_om.om")
    assert "IMOD" in err.value.fix


def test_truncated_om_is_a_clear_error(ascend_fixtures, tmp_path):
    data = (ascend_fixtures / "om" / "dynamic_and_static_graph_without_unfold.om").read_bytes()
    for size in (100, 300, 5000, len(data) - 10):
        cut = tmp_path / f"cut{size}.om"
        cut.write_bytes(data[:size])
        with pytest.raises(UserError) as err:
            read_model(cut)
        assert "OM" in err.value.what and err.value.fix


def test_om_json(tmp_path):
    doc = {"name": "net", "attr": [{"key": "soc_version", "value": {"s": "Ascend310"}}],
           "graph": [{"name": "main", "op": [
               {"name": "x", "type": "Data", "output_desc": [{"dtype": "DT_FLOAT", "layout": "NCHW",
                                                              "shape": {"dim": [1, 3, 8, 8]}}]},
               {"name": "w", "type": "Const", "output_desc": [{"dtype": "DT_FLOAT", "shape": {"dim": [4, 3, 1, 1]}}]},
               {"name": "conv", "type": "Conv2D", "input": ["x:0", "w:0"],
                "attr": [{"key": "strides", "value": {"list": {"i": [1, 1, 1, 1], "val_type": "VT_LIST_INT"}}}],
                "output_desc": [{"dtype": "DT_FLOAT16", "layout": "NC1HWC0", "shape": {"dim": [1, 1, 8, 8, 16]}}]},
               {"name": "out", "type": "NetOutput", "input": ["conv:0", "x:-1"]}]}]}
    path = tmp_path / "net.json"
    path.write_text(json.dumps(doc))
    model = read_model(path)
    assert model.format == "om_json" and model.metadata["soc_version"] == "Ascend310"
    conv = model.main.nodes[1]
    assert conv.attributes["strides"] == [1, 1, 1, 1]
    assert model.main.value("conv:0").type_text() == "float16[1,1,8,8,16] NC1HWC0"
    assert model.main.nodes[2].control_inputs == ["x"]
    assert summarize(model)["parameters"] == 12
    path.write_text(json.dumps(doc)[:200])
    with pytest.raises(UserError):
        read_model(path)


def _mutations(data: bytes, count: int, seed: int, start: int = 0):
    import random

    rng = random.Random(seed)
    for trial in range(count):
        b = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            b[rng.randrange(start, len(b))] = rng.randrange(256)
        yield bytes(b[:rng.randrange(1, len(b))] if trial % 4 == 0 else b)


def _read_or_user_error(path):
    try:
        model = read_model(path)
    except UserError:
        return
    summarize(model)
    for graph in model.all_graphs():
        graph.edges()


def test_damaged_om_files_never_crash(ascend_fixtures, tmp_path):
    for name in ("root_model.om", "dynamic_and_static_graph_without_unfold.om", "flow_model.om"):
        for k, data in enumerate(_mutations((ascend_fixtures / "om" / name).read_bytes(), 60, seed=len(name), start=256)):
            path = tmp_path / f"m{k}.om"
            path.write_bytes(data)
            _read_or_user_error(path)


def test_damaged_onnx_files_never_crash(tmp_path):
    data = feature_model(tmp_path, external=False).read_bytes()
    for k, mutated in enumerate(_mutations(data, 120, seed=5)):
        path = tmp_path / f"m{k}.onnx"
        path.write_bytes(mutated)
        _read_or_user_error(path)


def test_om_json_with_wrong_kinds_is_a_user_error(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"graph": [{"name": "g", "op": [{"name": "a", "type": "Data",
                                                                  "output_desc": [{"shape": {"dim": ["x"]}}]}]}]}))
    with pytest.raises(UserError) as err:
        read_model(path)
    assert "graph[0]" in err.value.where
