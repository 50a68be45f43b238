"""The graph panel: open, select, search, open a subgraph and go back, overlays, compare, export."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PySide6.QtCore import QPointF, Qt

from studio.core.formats import detect
from studio.tools.graph import overlay as overlay_colours
from studio.tools.graph.overlay import OverlayData
from studio.tools.graph.synthetic import write_synthetic
from studio.ui.links import Overlay
from studio.ui.panels.graph import GraphPanel

from graph_helpers import feature_model


@pytest.fixture
def panel(make_panel):
    return make_panel(GraphPanel, size=(1100, 700))


def _open(qtbot, panel, path):
    panel.open_file(detect(path))
    qtbot.waitUntil(lambda: panel.left.view is not None and panel.left.model.path == Path(path), timeout=10000)


def _wait_job(qtbot, handle):
    done = []
    handle.ended.connect(lambda: done.append(True))
    qtbot.waitUntil(lambda: bool(done) or not handle.active, timeout=10000)


def test_select_search_subgraph_and_export(qtbot, panel, tmp_path):
    path = feature_model(tmp_path)
    _open(qtbot, panel, path)
    canvas = panel.left.canvas
    view = panel.left.view
    # click the MatMul node: the details show its type, name and weight
    item = next(i for i, it in enumerate(view.items) if it.name == "dense/matmul")
    rect = canvas.painter_cache.rect(item)
    canvas.center_on(item, min_scale=1.0)
    centre = rect.center()
    pos = QPointF((centre.x() - canvas.origin.x()) * canvas.scale, (centre.y() - canvas.origin.y()) * canvas.scale)
    qtbot.mouseClick(canvas, Qt.MouseButton.LeftButton, pos=pos.toPoint())
    assert panel.left.selected_node == 0
    texts = [panel.details.topLevelItem(i).child(j).text(1) for i in range(panel.details.topLevelItemCount())
             for j in range(panel.details.topLevelItem(i).childCount())]
    assert "MatMul" in texts and "dense/matmul" in texts
    assert "dense/matmul" in canvas.tooltip_text(item)
    # find by type, then the next match wraps
    _wait_job(qtbot, panel.find("swish"))
    assert [m.index for m in panel.matches] == [3] and panel.left.selected_node == 3
    _wait_job(qtbot, panel.find("^gate/", regex=True))
    assert panel.left.selected_node == 1
    # upstream of the If node reaches the MatMul (captured by its branches)
    _wait_job(qtbot, panel.trace(False))
    assert canvas.state.highlighted[panel.left.item_of_node(0)]
    # open the If's then-branch by double-clicking the node, then go back
    if_item = panel.left.item_of_node(1)
    panel.views.activate(panel.left, if_item)
    qtbot.waitUntil(lambda: panel.left.view is not None and panel.left.graph.name.startswith("gate/if/"), timeout=5000)
    assert len(panel.left.stack) == 2 and panel.back_button.isEnabled()
    expected = {"gate/if/then_branch": ["Relu"], "gate/if/else_branch": ["Sigmoid"]}[panel.left.graph.name]
    assert [it.label for it in panel.left.view.items if it.kind == "node"] == expected
    panel.go_back()
    assert panel.left.graph.name == "features" and not panel.back_button.isEnabled()
    # export the view as SVG and PNG
    svg = tmp_path / "view.svg"
    _wait_job(qtbot, panel.export(svg))
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and "dense/matmul" in svg.read_text()
    png = tmp_path / "view.png"
    _wait_job(qtbot, panel.export(png))
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_big_model_groups_expand_and_show_node_link(qtbot, panel, tmp_path):
    path = write_synthetic(tmp_path / "big.onnx", 3000)
    _open(qtbot, panel, path)
    view = panel.left.view
    assert any(it.kind == "group" for it in view.items)
    focused = []
    panel.links.focus.connect(focused.append)
    # another panel asks to show a node hidden inside a collapsed group: groups expand, node selected
    panel.links.show_node.emit(None, "stage5/block3/conv2")
    qtbot.waitUntil(lambda: panel.left.selected_node >= 0, timeout=10000)
    node = panel.left.graph.nodes[panel.left.selected_node]
    assert node.name == "stage5/block3/conv2" and focused == []  # quietly: the sender raises the graph if asked
    assert panel.left.view.items[panel.left.item_of_node(panel.left.selected_node)].kind == "node"
    # a frame is painted (offscreen) without errors at every level of detail
    for scale in (0.01, 0.2, 1.0, 2.0):
        panel.left.canvas.scale = scale
        panel.left.canvas.repaint()
    # overlays from another panel colour nodes and show a legend
    panel.links.overlay.emit(Overlay("time share", {"stage5/block3/conv2": 0.2, "stage5/block3/bn2": 0.01},
                                     thresholds=[0.05, 0.1]))
    state = panel.left.canvas.state
    grey = overlay_colours.NO_DATA
    measured = {i for i, c in state.overlay.items() if c.name() != grey}
    assert len(measured) == len(state.overlay_text) == 2 and panel.left.canvas.legend
    # every other op box (and group) is greyed out: no category colour reads as a measurement
    view = panel.left.view
    assert all(state.overlay[i].name() == grey for i, it in enumerate(view.items)
               if it.kind in ("node", "group") and i not in measured)
    # the whole graph: every node, though the view shows collapsed groups; overlay colours kept
    whole = tmp_path / "whole.svg"
    _wait_job(qtbot, panel.export(whole, whole=True))
    text = whole.read_text()
    assert text.count('<g class="node">') == len(panel.left.graph.nodes)
    assert '<g class="group">' not in text and overlay_colours.BAD in text and grey in text


def test_compare_marks_nodes_on_one_side(qtbot, panel, tmp_path):
    a = write_synthetic(tmp_path / "a.onnx", 120)
    b = write_synthetic(tmp_path / "b.onnx", 160)
    panel.links.compare_graphs.emit(a, b)
    qtbot.waitUntil(lambda: panel.right.view is not None and panel.left.view is not None, timeout=10000)
    qtbot.waitUntil(lambda: bool(panel.right.canvas.state.marks), timeout=5000)
    assert not panel.left.canvas.state.marks  # every node of the smaller model exists on the right


def test_bad_file_shows_the_reason(qtbot, panel, ascend_fixtures, tmp_path):
    bad = tmp_path / "cut.om"
    bad.write_bytes((ascend_fixtures / "om" / "root_model.om").read_bytes()[:600])
    posted = []
    stop = panel.runner.board.subscribe(posted.append)
    try:
        panel.open_path(bad)
        qtbot.waitUntil(lambda: "Could not open cut.om" in panel.left.canvas.empty_text, timeout=5000)
    finally:
        stop()
    # the reason is on the notice board, once, with the file it concerns
    assert len(posted) == 1 and "OM" in posted[0].what and str(bad) in posted[0].message
    panel.set_overlay(OverlayData("x", {"a": 1.0}))  # no model: nothing to colour, no crash


def test_node_data_file_colours_the_model(qtbot, panel, tmp_path):
    import json

    from studio.tools.graph.macs import node_data
    from studio.tools.graph.reader import read_model

    path = write_synthetic(tmp_path / "m.onnx", 60)
    overlay = tmp_path / "macs.json"
    overlay.write_text(json.dumps(node_data(read_model(path).main)))
    panel.open_file(detect(overlay))  # before the model: kept and applied when it opens
    qtbot.waitUntil(lambda: panel.overlay is not None, timeout=5000)
    _open(qtbot, panel, path)
    assert panel.left.canvas.state.overlay and panel.left.canvas.legend_title.startswith("MACs share")


def test_close_compare_returns_to_one_model(qtbot, panel, tmp_path):
    a = write_synthetic(tmp_path / "a.onnx", 80)
    b = write_synthetic(tmp_path / "b.onnx", 120)
    _open(qtbot, panel, a)
    panel.compare(a, b)
    qtbot.waitUntil(lambda: panel.right.view is not None, timeout=10000)
    assert "⟷" in panel.crumb.text() and "only on the right" in panel.right.canvas.caption
    panel.close_compare()
    assert not panel.right.canvas.isVisible() and "⟷" not in panel.crumb.text()
    assert not panel.left.canvas.state.marks


def test_show_node_inside_a_subgraph_and_canvas_navigation(qtbot, panel, tmp_path):
    path = feature_model(tmp_path)
    focused = []
    panel.links.focus.connect(focused.append)
    panel.links.show_node.emit(path, "body/add")  # the model is opened first, then the Loop body
    qtbot.waitUntil(lambda: panel.left.graph is not None and panel.left.graph.name == "repeat/loop/body"
                    and panel.left.view is not None and panel.left.selected_node >= 0, timeout=10000)
    assert panel.left.graph.nodes[panel.left.selected_node].name == "body/add" and focused == []
    canvas = panel.left.canvas
    canvas.setFocus()
    scale = canvas.scale
    qtbot.keyClick(canvas, Qt.Key.Key_Plus)
    assert canvas.scale > scale
    qtbot.keyClick(canvas, Qt.Key.Key_Minus)
    assert abs(canvas.scale - scale) < 1e-9
    origin = canvas.origin
    qtbot.keyClick(canvas, Qt.Key.Key_Right)
    assert canvas.origin.x() > origin.x()
    qtbot.keyClick(canvas, Qt.Key.Key_Backspace)  # back to the main graph
    assert panel.left.graph.name == "features"


def _open_dynamic(qtbot, panel, tmp_path):
    """Open a one-Relu model whose input ``x`` is [N, 3] (N dynamic)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu")], "dyn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    path = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    _open(qtbot, panel, path)


def test_run_shapes_asks_for_dynamic_sizes_and_updates_the_details(qtbot, panel, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QInputDialog

    _open_dynamic(qtbot, panel, tmp_path)
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a, **k: ("", False)))
    assert panel.run_shapes() is None  # cancelled: nothing runs
    asked = []

    def answer(parent, title, prompt, text=""):
        asked.append((prompt, text))
        return ("x=5,3", True) if len(asked) > 1 else ("x=5", True)  # a wrong rank first

    monkeypatch.setattr(QInputDialog, "getText", staticmethod(answer))
    handle = panel.run_shapes()
    assert asked[0][1] == "x=?,3" and "x[0] (N)" in asked[0][0]  # never a silent 1
    _wait_job(qtbot, handle)
    assert panel.left.graph.value("r").type_text() == "float32[5,3] (runtime)"
    rows = {panel.details.topLevelItem(0).child(j).text(0): panel.details.topLevelItem(0).child(j).text(1)
            for j in range(panel.details.topLevelItem(0).childCount())}
    assert rows["shapes"] == "shapes from a run with x=5,3 (fed x: standard normal floats)" and rows["MACs"] == "15"


def test_the_run_shapes_button_asks_for_dynamic_sizes(qtbot, panel, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QInputDialog

    _open_dynamic(qtbot, panel, tmp_path)
    asked, statuses = [], []
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a, **k: asked.append(a) or ("", False)))
    panel.status.connect(statuses.append)
    panel._bar_buttons["Run shapes"].click()  # the button's clicked(bool) must not stand in for the sizes
    assert len(asked) == 1  # N was asked for, never guessed
    assert statuses[-1] == "Graph: Run shapes cancelled (dynamic inputs need sizes)"


def test_graph_chooser_for_multi_model_om(qtbot, panel, ascend_fixtures):
    _open(qtbot, panel, ascend_fixtures / "om" / "dynamic_and_static_graph_without_unfold.om")
    combo = panel.graph_combo
    assert combo.count() == 3 and panel.tool_row.is_shown(combo)  # on the row, or in its overflow when narrow
    combo.setCurrentIndex(2)
    combo.activated.emit(2)
    qtbot.waitUntil(lambda: panel.left.graph.name == "model2/sub_2" and panel.left.view is not None
                    and panel.left.view.graph.name == "model2/sub_2", timeout=5000)
    assert [it.label for it in panel.left.view.items if it.kind == "node"] == ["Data", "Mul", "NetOutput"]
    combo.activated.emit(0)
    assert panel.left.graph.name == "model0/root" and len(panel.left.stack) == 1
    # PartitionedCall opens its subgraph
    call = next(i for i, n in enumerate(panel.left.graph.nodes) if n.name == "known_op")
    panel.views.activate(panel.left, panel.left.item_of_node(call))
    qtbot.waitUntil(lambda: panel.left.view is not None and panel.left.view.graph.name == "sub_1", timeout=5000)


def test_double_click_a_frame_name_collapses_it(qtbot, panel, tmp_path):
    path = write_synthetic(tmp_path / "m.onnx", 60)
    _open(qtbot, panel, path)
    view = panel.left.view
    gid, (l, t, r, b) = view.frames[0]  # the biggest frame
    canvas = panel.left.canvas
    canvas.scale, canvas.origin = 1.0, QPointF(l - 10, t - 10)
    qtbot.mouseDClick(canvas, Qt.MouseButton.LeftButton, pos=QPointF(18, 16).toPoint())
    qtbot.waitUntil(lambda: panel.left.view is not view, timeout=5000)
    collapsed = [it for it in panel.left.view.items if it.kind == "group"]
    assert [it.index for it in collapsed] == [gid]


def test_find_opens_nested_subgraphs_and_matches_do_not_survive(qtbot, panel, tmp_path):
    from graph_helpers import outer_scope_if_model

    path = outer_scope_if_model(tmp_path)
    _open(qtbot, panel, path)
    _wait_job(qtbot, panel.find("deep"))  # only inside the If's nested If
    assert len(panel.matches) == 2 and "in a subgraph" in panel.find_label.text()
    qtbot.waitUntil(lambda: panel.left.view is not None and panel.left.selected_node >= 0, timeout=5000)
    # every level in the breadcrumb: main › If_0 › then_branch › decoder/If › <branch>
    titles = [level.title for level in panel.left.stack]
    assert titles[:3] == ["vad_like", "If_0 › then_branch", "decoder/If › else_branch"] or \
        titles[:3] == ["vad_like", "If_0 › then_branch", "decoder/If › then_branch"]
    assert len(titles) == 3 and panel.crumb.text().count("›") == 4
    assert "in If_0 › then_branch › decoder/If" in panel.find_label.toolTip()
    first = panel.left.graph.nodes[panel.left.selected_node].name
    panel.step_match(1)  # the other branch: a sibling subgraph
    qtbot.waitUntil(lambda: panel.left.view is not None and panel.left.selected_node >= 0
                    and panel.left.graph.nodes[panel.left.selected_node].name != first, timeout=5000)
    assert {first, panel.left.graph.nodes[panel.left.selected_node].name} == {"decoder/deep_tanh", "decoder/deep_sig"}
    # Back walks up one level at a time (the middle levels were never shown: laid out on the way back)
    panel.go_back()
    qtbot.waitUntil(lambda: panel.left.view is not None and panel.left.graph.name == "If_0/then_branch", timeout=5000)
    assert not panel.matches and panel.find_label.text() == ""  # another graph shown: matches cleared
    panel.step_match(1)  # F3 now selects nothing
    assert panel.left.selected_node == -1
    # a new model clears the matches too
    _wait_job(qtbot, panel.find("head"))
    assert panel.matches
    _open(qtbot, panel, feature_model(tmp_path))
    assert not panel.matches
    panel.step_match(1)
    assert panel.left.selected_node == -1 and len(panel.left.stack) == 1


def test_show_node_two_levels_down_keeps_every_breadcrumb_level(qtbot, panel, tmp_path):
    from graph_helpers import outer_scope_if_model

    path = outer_scope_if_model(tmp_path)
    panel.links.show_node.emit(path, "decoder/deep_tanh")
    qtbot.waitUntil(lambda: panel.left.graph is not None and panel.left.view is not None
                    and panel.left.selected_node >= 0 and len(panel.left.stack) == 3, timeout=10000)
    assert [lv.title for lv in panel.left.stack] == ["vad_like", "If_0 › then_branch", "decoder/If › then_branch"]


def test_long_names_are_elided_with_the_full_text_in_tooltips(qtbot, panel, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    long_name = "backbone/" + "very_long_scope_name_" * 6 + "output_tensor"
    body = helper.make_graph([helper.make_node("Relu", ["x"], ["b_out"], name="body/relu")], "body", [],
                             [helper.make_tensor_value_info("b_out", TensorProto.FLOAT, [2])])
    node_name = "encoder/" + "deeply_nested_block_" * 5 + "if"
    graph = helper.make_graph(
        [helper.make_node("Greater", ["x", "x"], ["c"], name="cmp"),
         helper.make_node("ReduceMin", ["c"], ["c1"], name="any", keepdims=0),
         helper.make_node("If", ["c1"], [long_name], name=node_name, then_branch=body, else_branch=body)],
        "long", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(long_name, TensorProto.FLOAT, [2])])
    path = tmp_path / "long.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    _open(qtbot, panel, path)
    view = panel.left.view
    pill = next(i for i, it in enumerate(view.items) if it.kind == "output")
    assert view.items[pill].label != long_name and "…" in view.items[pill].label
    assert long_name in panel.left.canvas.tooltip_text(pill)
    panel.select_node(node_name)
    panel.views.activate(panel.left, panel.left.item_of_node(panel.left.selected_node))
    qtbot.waitUntil(lambda: len(panel.left.stack) == 2 and panel.left.view is not None, timeout=5000)
    assert "…" in panel.crumb.text() and node_name in panel.crumb.toolTip()
    from PySide6.QtCore import Qt as _Qt

    assert panel.details.textElideMode() == _Qt.TextElideMode.ElideMiddle


def test_constant_weights_shown_in_the_consumer_not_as_boxes(qtbot, panel, tmp_path):
    from graph_helpers import constant_weights_model

    _open(qtbot, panel, constant_weights_model(tmp_path, blocks=3))
    view = panel.left.view
    assert not any(it.kind == "node" and view.graph.nodes[it.index].type == "Constant" for it in view.items)
    assert "(+ 13 constants drawn as weights)" in panel.left.canvas.caption
    panel.select_node("p2o.Conv.0")
    inputs = next(panel.details.topLevelItem(i) for i in range(panel.details.topLevelItemCount())
                  if panel.details.topLevelItem(i).text(0) == "Inputs")
    weight = next(inputs.child(j) for j in range(inputs.childCount()) if "[weight]" in inputs.child(j).text(1))
    rows = {weight.child(k).text(0): weight.child(k).text(1) for k in range(weight.childCount())}
    assert rows["shape"] == "[8,3,3,3]" and rows["stored in"] == "node p2o.Constant.0"


def test_left_to_right_layout_from_the_toolbar(qtbot, make_panel, tmp_path):
    """The toolbar's "Across" lays the graph on screen out left to right (and back)."""
    from studio.tools.graph.synthetic import write_synthetic
    from studio.ui.panels.graph import GraphPanel

    panel = make_panel(GraphPanel)
    panel.open_path(write_synthetic(tmp_path / "m.onnx", 300))
    qtbot.waitUntil(lambda: panel.active.level is not None and panel.active.level.view is not None, timeout=20000)
    down = panel.active.level.view
    assert down.direction == "TB"
    panel.direction_button.click()
    qtbot.waitUntil(lambda: panel.active.level.view is not down, timeout=20000)
    across = panel.active.level.view
    assert across.direction == "LR" and panel.direction_button.isChecked()
    left, top, right, bottom = across.layout.bounds
    l2, t2, r2, b2 = down.layout.bounds
    assert (right - left) / (bottom - top) > (r2 - l2) / (b2 - t2)  # wider than tall, relative to TB
    assert panel.active.canvas.view is across
    panel.direction_button.click()
    qtbot.waitUntil(lambda: panel.active.level.view.direction == "TB", timeout=20000)


def test_the_overlay_legend_never_hides_a_node(qtbot, panel, tmp_path):
    """The legend goes to a corner with no node under it (the demo U-Net's first nodes sit at the top left)."""
    from studio.tools.demo.models import build_unet
    import onnx

    path = tmp_path / "unet.onnx"
    onnx.save(build_unet(), str(path))
    _open(qtbot, panel, path)
    canvas = panel.left.canvas
    first = panel.left.graph.nodes[0].name
    panel.links.overlay.emit(Overlay("time share", {first: 0.2}, thresholds=[0.05, 0.1]))
    qtbot.waitUntil(lambda: bool(canvas.legend), timeout=10000)
    for size in ((695, 390), (560, 420), (1000, 520)):
        canvas.resize(*size)
        canvas.fit()
        canvas.repaint()
        box = canvas.legend_box()
        assert box is not None and canvas.rect().contains(box.toRect())
        cache = canvas.painter_cache
        on_screen = []
        for i in range(cache.count):
            r = cache.rect(i)  # scene -> widget coordinates, as the canvas paints them
            widget = r.translated(-canvas.origin.x(), -canvas.origin.y())
            widget = type(r)(widget.x() * canvas.scale, widget.y() * canvas.scale,
                             widget.width() * canvas.scale, widget.height() * canvas.scale)
            if widget.intersects(type(r)(canvas.rect())):
                on_screen.append(widget)
        assert on_screen and not any(w.intersects(box) for w in on_screen)
