"""The Accuracy panel's toolbar (compare, host actions, FP16 steps, show in graph, thresholds,
mapping, export, clear) and what it shows before the first comparison."""

from __future__ import annotations

from PySide6.QtWidgets import QPushButton

from studio.ui.panels.accuracy.thresholds_dialog import thresholds_button
from studio.ui.widgets.empty_state import EmptyState
from studio.ui.widgets.tool_row import ToolRow

_EMPTY_TITLE = "No comparison yet"
_EMPTY = ("Open a comparison CSV, or two dump folders (golden first, then target): folders written by "
          "<code>studio dump</code>, .npy dump folders or Ascend NPU dumps. The Graph panel's <b>FP16 check</b> "
          "makes both dumps of an ONNX model for you.<br>From the command line: <code>studio dump MODEL -o DIR "
          "[--fp16-sim]</code>, then <code>studio compare GOLDEN TARGET -o result.csv</code>.")


def _button(text: str, tip: str, slot, parent) -> QPushButton:
    button = QPushButton(text, parent)
    button.setToolTip(tip)  # '' clears it
    button.clicked.connect(slot)
    return button


def build_toolbar(panel) -> ToolRow:
    """Make the toolbar of the accuracy panel ``panel`` (its buttons as the panel's attributes, wired to
    the parts it is composed of) and return it."""
    from studio.ui.widgets.host_button import host_button

    panel.export_button = _button("Export CSV…", "", lambda: panel.export_csv(), panel)
    panel.graph_button = _button("Show in graph", "Select the op in the graph panel and colour every op by its "
                                 "verdict (pass / fail); ops not compared are greyed out", panel.show_in_graph, panel)
    panel.clear_button = _button("Clear", "", panel.clear, panel)
    panel.dumps_button = _button("Compare dumps…", "Pick the golden dump folder, then the target dump folder",
                                 panel.comparisons.pick_dumps, panel)
    panel.mapping_button = _button("Mapping…", 'Compare again through a fused-op mapping: the converter\'s '
                                   'report ("node_mapping") or {"converted op": ["original op", ...]}',
                                   panel.comparisons.pick_mapping, panel)
    # the host actions, shared with the Run menu
    panel.host_button, panel.host_actions = host_button(panel, panel.links, {
        "dump": "Run a run configuration on its host with a dump acl.json and open the NPU dumps here",
        "dump_compare": "Dump on the host, and the original .onnx here with the same inputs, then compare "
                        "them op by op here"})
    # Any Linux host (no CANN): the same .onnx dumped here and by Studio's engine there.
    panel.host_button.menu().addSeparator()
    panel.here_and_host_action = panel.host_button.menu().addAction("Compare an .onnx here and on a host…")
    panel.here_and_host_action.setToolTip("Dump an ONNX model here and with Studio's engine on any SSH host (e.g. "
                                         "with its GPU provider), same input, and compare the two op by op")
    panel.here_and_host_action.triggered.connect(lambda: panel.comparisons.pick_here_and_host())
    bar = ToolRow(panel, "accuracy")  # the tools that do not fit go under its "More" menu
    panel.thresholds_button = thresholds_button(panel)
    # Apply sits beside FP16 ▾ (a row of its own made the window taller than a 720 px screen)
    for button in (panel.dumps_button, panel.host_button, panel.fp16.button, panel.apply_button,
                   panel.graph_button, panel.thresholds_button, panel.mapping_button, panel.export_button,
                   panel.clear_button):
        bar.addWidget(button)
    panel.tool_row = bar
    bar.set_shown(panel.apply_button, False)  # until a set is found
    return bar


def empty_state(comparisons, dumps_tip: str, parent) -> EmptyState:
    """The hint shown while there is no comparison, with its two ways to start one."""
    empty = EmptyState(_EMPTY_TITLE, _EMPTY, parent)
    empty.add_action("Open a comparison CSV…", comparisons.pick_csv,
                     "A CSV written by studio compare, or by Ascend's msaccucmp")
    empty.add_action("Compare dumps…", comparisons.pick_dumps, dumps_tip)
    return empty
