"""The "something selected" states the screenshots show after the demo opens: a node in the graph,
a slice in the profiler, a compared op in the accuracy panel, a finding in the advisor, and the
Converter's Quantize page with a finished run.

Each function takes the built panel and selects what a user would click first; it returns False
when the panel has nothing to select (then no screenshot of that state is written).
"""

from __future__ import annotations


def select_graph_node(panel) -> bool:
    """The node with the most attributes (a Conv in the U-Net): its details list attribute names."""
    graph = panel.left.graph
    if graph is None or not graph.nodes:
        return False
    index = max(range(len(graph.nodes)), key=lambda i: len(graph.nodes[i].attributes))
    return bool(panel.select_node(index, panel.left))


def select_profiler_slice(panel) -> bool:
    """The longest op slice (its args fill the Selected slice table)."""
    loaded = panel.current
    if loaded is None or not loaded.by_name:
        return False
    top = max(loaded.by_name, key=lambda stat: stat.total_us if stat.share > 0 else -1)
    indices = loaded.trace.slices_named(top.name)
    if not indices.size:
        return False
    panel.timeline.select_slice(int(indices[0]))
    return True


def select_accuracy_row(panel) -> bool:
    """The first failing op, else the second row (the drill-down's tensors and error map)."""
    if panel.result is None or panel.proxy.rowCount() < 2:
        return False
    panel.table.selectRow(1)
    panel.tabs.setCurrentIndex(panel.tabs.count() - 1)  # the drill-down
    return True


def select_advisor_finding(panel) -> bool:
    """The first finding under the first severity."""
    tree = panel.tree
    if tree.topLevelItemCount() == 0 or tree.topLevelItem(0).childCount() == 0:
        return False
    tree.setCurrentItem(tree.topLevelItem(0).child(0))
    return True


def quantize_demo_classifier(panel) -> bool:
    """The Converter's Quantize page quantising the demo classifier on the demo pictures (a tight
    cosine target, so some layers stay in float; untimed, Ascend files written): the form and the
    result side by side."""
    from pathlib import Path

    folder = panel.workspace_folder
    model = Path(folder) / "models" / "classifier.onnx" if folder else None
    if model is None or not model.is_file():
        return False
    panel.model_page.set_model(model)
    panel.go_to(3)
    page = panel.quantize_page
    page.calib_edit.setText(str(Path(folder) / "images"))
    page.target.cosine_spin.setValue(0.99999)
    page.timing_box.setChecked(False)
    page.ascend.box.setChecked(True)
    return panel.quantize.start() is not None


SELECTIONS = {"graph": select_graph_node, "profiler": select_profiler_slice, "accuracy": select_accuracy_row,
              "advisor": select_advisor_finding, "convert": quantize_demo_classifier}
