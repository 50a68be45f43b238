"""Layered layout, scope groups and sections, overlays and SVG export (no Qt)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.graph.export_svg import export_svg
from studio.tools.graph.grouping import Hierarchy
from studio.tools.graph.layout import layered_layout
from studio.tools.graph.model import Graph, Node
from studio.tools.graph.overlay import OverlayData, load_node_data
from studio.tools.graph.reader import read_model
from studio.tools.graph.synthetic import write_synthetic
from studio.tools.graph.view import build_view


def _check_layout(lay, src, dst):
    # every edge goes downwards (from a layer above to a layer below)
    assert np.all(lay.layer[src] < lay.layer[dst])
    # no two boxes of a layer overlap
    order = np.lexsort((lay.x, lay.layer))
    same = lay.layer[order][1:] == lay.layer[order][:-1]
    gaps = np.diff(lay.x[order]) - (lay.width[order][1:] + lay.width[order][:-1]) / 2
    assert np.all(gaps[same] >= 0)


def test_diamond_and_skip():
    # 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 0 -> 3 (a skip)
    src, dst = np.array([0, 0, 1, 2, 0]), np.array([1, 2, 3, 3, 3])
    lay = layered_layout(np.full(4, 60.0), np.full(4, 28.0), src, dst)
    assert lay.layer.tolist() == [0, 1, 1, 2]
    _check_layout(lay, src, dst)
    assert lay.x[1] != lay.x[2]
    # the skip edge goes through one dummy point between its ends
    assert len(lay.edge_polyline(4)) == 3
    assert lay.edge_polyline(0)[0][1] < lay.edge_polyline(0)[-1][1]


def test_cycles_do_not_break_the_layout():
    src, dst = np.array([0, 1, 2, 2]), np.array([1, 2, 0, 2])
    lay = layered_layout(np.full(3, 50.0), np.full(3, 20.0), src, dst)
    assert np.isfinite(lay.x).all() and len(set(lay.layer.tolist())) == 3


def test_synthetic_graph_layout_is_valid(tmp_path):
    model = read_model(write_synthetic(tmp_path / "s.onnx", 2000))
    view = build_view(model.main, None)  # everything, flat
    lay = view.layout
    assert len(view.items) == len(model.main.nodes) + 2  # plus the input and the output terminal
    _check_layout(lay, lay.edge_src[lay.edge_src != lay.edge_dst], lay.edge_dst[lay.edge_src != lay.edge_dst])
    # parallel q/k/v branches of an attention block share a layer side by side
    items = {it.name: i for i, it in enumerate(view.items)}
    q, k = items["stage3/block0/attn/q"], items["stage3/block0/attn/k"]
    assert lay.layer[q] == lay.layer[k] and lay.x[q] != lay.x[k]


def test_groups_collapse_and_sections():
    nodes = [Node(f"blk{b}/op{i}", "Relu", [f"t{b * 3 + i - 1}"] if b or i else [], [f"t{b * 3 + i}"])
             for b in range(3) for i in range(3)]
    graph = Graph("g", nodes)
    h = Hierarchy(graph)
    labels = sorted(h.groups[g].label for g in h.groups[0].groups)
    assert labels == ["blk0", "blk1", "blk2"]
    collapsed = build_view(graph, h, {0})
    assert [it.kind for it in collapsed.items if it.kind != "input" and it.kind != "output"] == ["group"] * 3
    assert collapsed.layout.edge_src.size == 2  # blk0 -> blk1 -> blk2, edges merged
    full = build_view(graph, h, {g.id for g in h.groups})
    assert sum(it.kind == "node" for it in full.items) == 9 and len(full.frames) == 3
    # a flat level with more children than the limit is split into contiguous sections
    flat = Graph("flat", [Node(f"n{i}", "Add", [f"v{i - 1}"] if i else [], [f"v{i}"]) for i in range(2500)])
    hs = Hierarchy(flat, section_limit=1000)
    sections = [hs.groups[g] for g in hs.groups[0].groups]
    assert [s.label for s in sections] == ["section 1 of 3", "section 2 of 3", "section 3 of 3"]
    assert sections[0].nodes == list(range(1000))
    view = build_view(flat, hs, {0})
    assert sum(it.kind == "group" for it in view.items) == 3
    # the first view shows real nodes: the first section opens, the others stay boxes
    first = build_view(flat, hs)
    assert sum(it.kind == "node" for it in first.items) == 1000
    assert sum(it.kind == "group" for it in first.items) == 2


def test_big_graph_opens_collapsed(tmp_path):
    model = read_model(write_synthetic(tmp_path / "s.onnx", 5000))
    h = Hierarchy(model.main)
    view = build_view(model.main, h)
    assert 10 < len(view.items) <= 420
    assert any(it.kind == "group" for it in view.items)


def test_overlay_thresholds_and_model_explorer_json(tmp_path):
    data = OverlayData("cos", {"a": 0.5, "b": 0.995, "c": 0.9999}, thresholds=[0.99, 0.999], higher_is_better=True)
    assert data.colour(0.5) != data.colour(0.9999)
    legend = data.legend()
    assert len(legend) == 4 and legend[-1][1] == "no data"  # three bands, and the grey of nodes without data
    nd = {"name": "op time", "results": {"dense/matmul": {"value": 12.5}, "h": {"value": 3}, "x": {"value": "cat"}},
          "thresholds": [{"value": 5, "bgColor": "green"}, {"value": 20, "bgColor": "#ff0000"}]}
    path = tmp_path / "nd.json"
    path.write_text(json.dumps(nd))
    overlay = load_node_data(path)
    assert overlay.title == "op time" and overlay.values == {"dense/matmul": 12.5, "h": 3.0}
    assert overlay.colour(3) == "#008000" and overlay.colour(12.5) == "#ff0000" and overlay.colour(30) is None
    path.write_text(json.dumps({"graph_a": nd}))
    assert load_node_data(path).values["h"] == 3.0
    path.write_text("[1, 2]")
    with pytest.raises(UserError):
        load_node_data(path)


def test_svg_export_is_valid_xml(tmp_path):
    model = read_model(write_synthetic(tmp_path / "s.onnx", 300))
    view = build_view(model.main, Hierarchy(model.main))
    out = run_job(export_svg(view, tmp_path / "g.svg"))
    root = ET.parse(out).getroot()
    rects = root.findall(".//{http://www.w3.org/2000/svg}rect")
    assert len(rects) >= len(view.items)
    titles = {t.text for t in root.iter("{http://www.w3.org/2000/svg}title")}
    assert "stage1/block0/conv1" in titles or any(t and t.startswith("stage1") for t in titles)


def test_repeated_blocks_are_recognised(tmp_path):
    model = read_model(write_synthetic(tmp_path / "s.onnx", 800))
    h = Hierarchy(model.main)
    blocks = {h.groups[g].path: n for g, n in h.alike.items()}
    # every ResNet block of a stage has the same structure; a transformer block differs from them
    assert blocks["stage1/block0"] >= 24 and blocks["stage1/block0"] == blocks["stage2/block5"]
    assert "stage3/block0" not in blocks or blocks["stage3/block0"] != blocks["stage1/block0"]
    view = build_view(model.main, h, {0, h.groups[0].groups[0]})
    assert any("alike" in it.sublabel for it in view.items if it.kind == "group")


def test_runtime_shapes_win(tmp_path):
    model = read_model(write_synthetic(tmp_path / "s.onnx", 100))
    graph = model.main
    assert graph.value("stage1/block0/conv1").shape == (1, 4, 4, 4)
    assert graph.apply_runtime_shapes({"stage1/block0/conv1": (2, 4, 4, 4), "not_a_tensor": (1,)}) == 1
    value = graph.value("stage1/block0/conv1")
    assert value.shape == (2, 4, 4, 4) and value.runtime and value.type_text().endswith("(runtime)")


def test_nested_layout_keeps_groups_inside_their_frames(tmp_path):
    model = read_model(write_synthetic(tmp_path / "s.onnx", 400))
    h = Hierarchy(model.main)
    view = build_view(model.main, h, {g.id for g in h.groups if g.parent != -2})
    lay = view.layout
    frames = dict(view.frames)
    assert len(frames) > 20
    for i, item in enumerate(view.items):
        if item.kind != "node":
            continue
        gid = int(h.node_group[item.index])
        while gid > 0:  # inside the frame of every group that holds it
            l, t, r, b = frames[gid]
            assert l <= lay.x[i] - lay.width[i] / 2 and lay.x[i] + lay.width[i] / 2 <= r
            assert t <= lay.y[i] - lay.height[i] / 2 and lay.y[i] + lay.height[i] / 2 <= b
            gid = h.groups[gid].parent
    # sibling frames never overlap
    for g in h.groups:
        kids = [frames[c] for c in g.groups if c in frames]
        for k, (l1, t1, r1, b1) in enumerate(kids):
            for l2, t2, r2, b2 in kids[k + 1:]:
                assert r1 <= l2 or r2 <= l1 or b1 <= t2 or b2 <= t1
    # every edge starts at its source box and ends at its target box
    for k in range(lay.edge_src.size):
        pts = lay.edge_polyline(k)
        a, b = lay.edge_src[k], lay.edge_dst[k]
        assert abs(pts[0][1] - (lay.y[a] + lay.height[a] / 2)) < 1e-6
        assert abs(pts[-1][1] - (lay.y[b] - lay.height[b] / 2)) < 1e-6


def test_left_to_right_view_flows_across_with_names_above_and_boxes_apart(tmp_path):
    """LR: the same graph with layers as columns; boxes keep their real size, no two overlap, every
    edge leaves its source's right side and enters its target's left side, and each frame keeps
    a name strip above the items it holds."""
    from studio.tools.graph.nested import FRAME_TOP

    model = read_model(write_synthetic(tmp_path / "s.onnx", 400))
    h = Hierarchy(model.main)
    expanded = {g.id for g in h.groups if g.parent != -2}
    down = build_view(model.main, h, expanded)
    across = build_view(model.main, h, expanded, direction="LR")
    lay = across.layout
    assert across.direction == "LR" and np.array_equal(lay.width, down.layout.width)  # real box sizes
    left, top, right, bottom = lay.bounds
    assert right - left > bottom - top  # a chain of blocks runs across, not down
    boxes = np.stack([lay.x - lay.width / 2, lay.y - lay.height / 2, lay.x + lay.width / 2, lay.y + lay.height / 2], 1)
    for i in range(len(boxes)):  # no overlap (a strict check against every other box)
        l, t, r, b = boxes[i]
        others = np.delete(boxes, i, axis=0)
        assert not np.any((others[:, 0] < r - 1e-6) & (l < others[:, 2] - 1e-6)
                          & (others[:, 1] < b - 1e-6) & (t < others[:, 3] - 1e-6)), across.items[i].name
    for k in range(lay.edge_src.size):
        pts = lay.edge_polyline(k)
        a, b = lay.edge_src[k], lay.edge_dst[k]
        assert abs(pts[0][0] - (lay.x[a] + lay.width[a] / 2)) < 1e-6
        assert abs(pts[-1][0] - (lay.x[b] - lay.width[b] / 2)) < 1e-6
    frames = dict(across.frames)
    for i, item in enumerate(across.items):
        if item.kind == "node":
            gid = int(h.node_group[item.index])
            while gid > 0:
                l, t, r, b = frames[gid]
                assert l <= boxes[i][0] and boxes[i][2] <= r and t + FRAME_TOP - 1e-6 <= boxes[i][1] and boxes[i][3] <= b
                gid = h.groups[gid].parent
    with pytest.raises(ValueError):
        build_view(model.main, h, expanded, direction="sideways")
