"""The graph engine on the kinds of real models that broke it: >1,000 sibling scopes, weights held in
Constant nodes with dynamic input dims (PaddlePaddle exports), inputs read only inside If bodies
(silero-vad), and the real models the ``onnx`` wheel ships (light_*). Every count is checked against
onnx / numpy / ONNX Runtime, not against the code under test."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.graph.export_svg import export_svg
from studio.tools.graph.grouping import Hierarchy
from studio.tools.graph.macs import graph_macs, macs_report, top_nodes
from studio.tools.graph.reader import read_model
from studio.tools.graph.search import find_in_subgraphs, subgraph_trail
from studio.tools.graph.shapes import apply_input_shapes, parse_input_shapes
from studio.tools.graph.summary import format_summary, summarize
from studio.tools.graph.view import build_view

from graph_helpers import constant_weights_model, outer_scope_if_model, residual_scopes_model

LIGHT = Path(__import__("onnx").__file__).parent / "backend" / "test" / "data" / "light"


def _onnx_counts(path: Path) -> tuple[int, int]:
    """(nodes in every graph, weight elements), read with onnx + numpy: initializers, Constant values,
    and the tensors ConstantOfShape makes from a stored shape (whose shape vector is not a weight)."""
    import onnx
    from onnx import numpy_helper

    nodes = params = 0
    stack = [onnx.load(str(path)).graph]
    while stack:
        g = stack.pop()
        inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        sizing, read = set(), {o.name for o in g.output}
        for n in g.node:
            nodes += 1
            if n.op_type == "ConstantOfShape" and n.input[0] in inits:
                params += int(np.prod(inits[n.input[0]]))
                sizing.add(n.input[0])
            else:
                read.update(n.input)
            for a in n.attribute:
                if n.op_type == "Constant" and a.name == "value":
                    params += numpy_helper.to_array(a.t).size
                if a.type == a.GRAPH:
                    stack.append(a.g)
        params += sum(a.size for name, a in inits.items() if name not in sizing or name in read)
    return nodes, params


def test_more_than_1000_sibling_scopes_open_and_export(tmp_path):
    graph = read_model(residual_scopes_model(tmp_path, blocks=1100)).main
    hierarchy = Hierarchy(graph)  # raised KeyError in _repeats: sections hold groups with smaller ids
    top = [hierarchy.groups[g] for g in hierarchy.groups[0].groups]
    assert [g.label for g in top] == ["section 1 of 2", "section 2 of 2"]
    assert all(g.path == g.label for g in top)  # one spelling: frames show the path, boxes the label
    blocks = [g for g in hierarchy.groups if g.parent >= 0 and g.label.startswith("block")]
    assert len(blocks) == 1100 and {hierarchy.alike[g.id] for g in blocks} == {1100}
    view = build_view(graph, hierarchy)
    path = run_job(export_svg(view, tmp_path / "deep.svg"))
    ET.parse(path)
    whole = build_view(graph, hierarchy, {g.id for g in hierarchy.groups if g.parent != -2})
    assert sum(1 for it in whole.items if it.kind == "node") == 4400


def test_constant_nodes_are_weights_of_their_consumers(tmp_path):
    path = constant_weights_model(tmp_path)
    model = read_model(path)
    graph = model.main
    nodes, params = _onnx_counts(path)
    assert not any(n.type == "Constant" for n in graph.nodes)  # no boxes of their own
    assert graph.file_nodes == nodes and len(graph.folded) == 40 * 4 + 1
    assert graph.parameters() == params == 40 * 2 + sum(8 * (3 if i == 0 else 8) * 9 + 8 for i in range(40)) + 80
    conv = graph.nodes[graph.node_index()["p2o.Conv.0"]]
    weight = graph.initializers[conv.inputs[1]]
    assert weight.shape == (8, 3, 3, 3) and weight.origin == "p2o.Constant.0"
    assert weight.statistics()["elements"] == 216
    summary = summarize(model)
    assert summary["nodes"] == nodes and summary["op_types"]["Constant"] == 161
    assert summary["parameters"] == params and summary["constants_folded"] == 161
    # drawn: no Constant items, and the export stays narrow (Constants in one row made it very wide)
    view = build_view(graph, Hierarchy(graph), None)
    assert not any(it.kind == "node" and graph.nodes[it.index].type == "Constant" for it in view.items)
    svg = ET.parse(run_job(export_svg(view, tmp_path / "p.svg"))).getroot()
    assert float(svg.get("width")) < 1000


def test_macs_from_given_shapes_checked_by_hand_and_onnxruntime(tmp_path):
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    path = constant_weights_model(tmp_path)
    model = read_model(path)
    # dynamic input, nothing given: no guessed MACs, the unknown dims are named
    report = macs_report(model)
    assert report["total"] == 0 and report["unknown"] > 0 and report["top"] == []
    assert [(d["input"], d["axis"]) for d in report["unknown_dims"]] == [("x", 0), ("x", 2), ("x", 3)]
    assert "p2o.DynamicDimension.1" in report["shapes"] and "--input-shape" in report["shapes"]
    source = apply_input_shapes(model, parse_input_shapes(["x=1,3,32,48"]))
    assert source.given == {"x": (1, 3, 32, 48)} and source.unknown_dims == []
    macs = graph_macs(model.main)
    # hand computation from the Constant tensors (numpy) and the output shapes ONNX Runtime produces
    proto = onnx.load(str(path))
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in proto.graph.node if n.op_type == "Constant"}
    by_name = {n.name: n for n in proto.graph.node}
    probe = onnx.load(str(path))
    probe.graph.output.extend([onnx.ValueInfoProto(name="conv7"), onnx.ValueInfoProto(name="flat")])
    run = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = dict(zip([o.name for o in run.get_outputs()], run.run(None, {"x": np.zeros((1, 3, 32, 48), np.float32)})))
    w7 = consts[by_name["p2o.Conv.7"].input[1]]
    assert macs["p2o.Conv.7"] == outs["conv7"].size * w7.shape[1] * w7.shape[2] * w7.shape[3] == 8 * 32 * 48 * 72
    wm = consts[by_name["p2o.MatMul.0"].input[1]]
    assert macs["p2o.MatMul.0"] == outs["logits"].size * outs["flat"].shape[-1] == 10 * wm.shape[0]
    report = macs_report(model, source, top=500)
    assert report["unknown"] == 0 and report["shapes"] == "shapes given: x=1,3,32,48"
    assert all(macs_row["macs"] > 0 for macs_row in report["top"])
    assert not any("Constant" in row["name"] for row in report["top"])
    assert top_nodes({"a": 0, "b": 5}, 10) == [("b", 5)]


@pytest.mark.parametrize("spec, message", [
    (["y=1,3,32,32"], "no input named 'y'"), (["x=1,3,32"], "has 4 dims"), (["x=2,4,32,32"], "fixed at 3"),
])
def test_wrong_input_shapes_are_user_errors(tmp_path, spec, message):
    model = read_model(constant_weights_model(tmp_path, blocks=1))
    with pytest.raises(UserError, match=message):
        apply_input_shapes(model, parse_input_shapes(spec))


@pytest.mark.parametrize("spec", ["x=1,a", "=1,2", "x=0,3", "x=1;x=2"])
def test_unreadable_input_shapes_are_user_errors(spec):
    with pytest.raises(UserError):
        parse_input_shapes([spec])


def test_outer_scope_inputs_connect_to_the_if_node(tmp_path):
    model = read_model(outer_scope_if_model(tmp_path))
    main = model.main
    view = build_view(main, Hierarchy(main))
    index = {it.name: i for i, it in enumerate(view.items)}
    edges = set(zip(view.layout.edge_src.tolist(), view.layout.edge_dst.tolist()))
    for name in ("input", "state"):  # read only inside the If's bodies
        assert (index[name], index["If_0"]) in edges, name
    # inside a body, the outer values are drawn as its inputs
    then = main.nodes[main.node_index()["If_0"]].subgraphs["then_branch"]
    sub = build_view(then, Hierarchy(then))
    outer = {it.name: it for it in sub.items if it.kind == "input"}
    assert set(outer) == {"input", "state"} and outer["input"].sublabel.startswith("outer")
    assert "half" in then.initializers  # the body's Constant is a weight of the body


def test_find_reaches_nested_subgraphs_with_every_level(tmp_path):
    model = read_model(outer_scope_if_model(tmp_path))
    matches = find_in_subgraphs(model.main, "deep")
    assert sorted((m.graph.nodes[m.index].name, m.where) for m in matches) == [
        ("decoder/deep_sig", "If_0 › then_branch › decoder/If › else_branch"),
        ("decoder/deep_tanh", "If_0 › then_branch › decoder/If › then_branch")]
    assert find_in_subgraphs(model.main, "If_0")[0].trail == ()  # the searched graph first
    tanh = next(m for m in matches if m.graph.nodes[m.index].type == "Tanh")
    trail = subgraph_trail(model.main, tanh.graph)
    assert [title for _, title in trail] == ["If_0 › then_branch", "decoder/If › then_branch"]


def test_light_models_summary_and_export_match_onnx(tmp_path):
    models = sorted(LIGHT.glob("light_*.onnx"))
    assert len(models) >= 8
    for path in models:
        model = read_model(path)
        nodes, params = _onnx_counts(path)
        summary = summarize(model)
        assert summary["nodes_total"] == nodes and summary["parameters"] == params, path.name
        assert summary["parameters"] > 50_000, path.name  # the weights ConstantOfShape makes are counted
        assert summary["macs_nodes"] == len(model.main.nodes), path.name  # static shapes: every node counted
        assert "MACs (main graph): " in format_summary(summary)
        graph = model.main
        view = build_view(graph, Hierarchy(graph), None)
        svg = ET.parse(run_job(export_svg(view, tmp_path / f"{path.stem}.svg"))).getroot()
        assert float(svg.get("width")) < 5000, path.name  # densenet121 was 200,172 px wide


def test_svg_export_into_a_missing_folder_is_a_user_error(tmp_path):
    graph = read_model(outer_scope_if_model(tmp_path)).main
    view = build_view(graph, Hierarchy(graph))
    with pytest.raises(UserError, match="Cannot write the SVG file"):
        run_job(export_svg(view, tmp_path / "missing" / "g.svg"))
