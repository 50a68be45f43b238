"""The msprobe view's module graph: both dumps' module trees side by side in the graph panel,
coloured by the worst verdict under each node; a node clicked there shows its rows in the view."""

from __future__ import annotations

import json

from studio.core.formats import detect
from studio.tools.graph.overlay import BAD, GOOD, NO_DATA
from studio.ui.panels.accuracy import AccuracyPanel
from studio.ui.panels.graph import GraphPanel

RESNET = "real/msprobe/quick_start_gpu_dump_resnet/gpu_dump"


def test_module_graph_side_by_side_and_a_clicked_node_shows_its_rows(qtbot, make_panels, ascend_fixtures):
    accuracy, graph, links = make_panels(AccuracyPanel, GraphPanel, size=(1200, 800))
    root = ascend_fixtures / RESNET
    golden, target = root / "step0" / "proc2016" / "dump.json", root / "step1" / "proc2016" / "dump.json"
    accuracy.open_file(detect(golden))
    accuracy.open_file(detect(target))
    qtbot.waitUntil(lambda: accuracy.msprobe_result is not None, timeout=30000)
    view = accuracy.msprobe_view
    assert view.graph_button.isEnabled()
    focused = []
    links.focus.connect(focused.append)
    view.graph_button.click()
    qtbot.waitUntil(lambda: graph.left.view is not None and graph.right.view is not None
                    and graph.left.model.path.name == graph.right.model.path.name == "construct.json"
                    and graph.right.model.path.parent.parent.name == "step0", timeout=30000)
    assert focused[-1] == "graph" and graph.left.model.path == target.with_name("construct.json")
    # the tree on each side is its construct.json
    for side, dump in ((graph.left, target), (graph.right, golden)):
        parents = json.loads(dump.with_name("construct.json").read_text())
        assert {n.name for n in side.view.graph.nodes} == set(parents) | {p for p in parents.values() if p}
    # colours: a module with an error under it is BAD, one whose calls all pass GOOD (checked from the rows)
    result = accuracy.msprobe_result
    items = {it.name: i for i, it in enumerate(graph.left.view.items)}
    overlay = graph.left.canvas.state.overlay

    def under(module):
        return [r.result for r in result.rows if module == r.target_api or module in result.target.module_path(r.target_api)]

    assert "error" in under("Module.layer4.Sequential.backward.0")
    assert overlay[items["Module.layer4.Sequential.backward.0"]].name() == BAD
    passing = next(name for name in items if under(name) and set(under(name)) == {"pass"})
    assert overlay[items[passing]].name() == GOOD
    assert overlay[items["Tensor.to.0.forward"]].name() == NO_DATA  # not compared (msprobe ignores "to")
    assert "error" in graph.left.canvas.state.overlay_text[items["Module.layer4.Sequential.backward.0"]]
    # a module clicked in the graph: the view shows the rows of the calls inside it, and comes to the front
    module = "Module.layer1.0.Bottleneck.forward.0"
    graph.left.canvas.item_clicked.emit(items[module])
    expected = [r for r in result.rows if module in result.target.module_path(r.target_api)]
    assert 0 < view.rows.rowCount() == len(expected) < len(result.rows)
    assert view.rows.rows == expected and focused[-1] == "accuracy" and module in view.shown.text()
    # an API call: its own rows
    graph.left.canvas.item_clicked.emit(items["Functional.conv2d.0.forward"])
    assert {r.target_api for r in view.rows.rows} == {"Functional.conv2d.0.forward"}


def test_module_graph_button_is_off_for_a_comparison_csv(qtbot, make_panel, ascend_fixtures, tmp_path):
    import subprocess
    import sys

    panel = make_panel(AccuracyPanel)
    root = ascend_fixtures / RESNET
    done = subprocess.run([sys.executable, "-m", "studio", "compare", str(root / "step0"), str(root / "step1"),
                           "-o", str(tmp_path / "r.csv")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    panel.open_file(detect(tmp_path / "r.msprobe.csv"))
    qtbot.waitUntil(lambda: panel.msprobe_result is not None, timeout=30000)
    assert not panel.msprobe_view.graph_button.isEnabled()  # a CSV holds no module tree


def test_a_module_tree_offers_no_model_tools():
    from studio.ui.panels.graph.state import tools_enabled

    assert not any(tools_enabled("msprobe_construct").values())  # no model: nothing to convert, run or profile
