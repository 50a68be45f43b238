"""The Graph panel's toolbar."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QMenu, QToolButton, QWidget

from studio.ui.widgets.elided_label import ElidedLabel
from studio.ui.widgets.tool_row import ToolRow, menu_button


def tool_button(text: str, tip: str, handler, parent: QWidget) -> QToolButton:
    """A flat tool button with a tooltip, wired to ``handler`` (None: not wired)."""
    button = QToolButton(parent)
    button.setText(text)
    button.setToolTip(tip)
    button.setAutoRaise(True)
    if handler is not None:
        button.clicked.connect(handler)
    return button


def build_toolbar(panel) -> ToolRow:
    """Make the toolbar (as attributes of ``panel``, wired to the parts it is composed of) and return it."""
    views, tools = panel.views, panel.tools
    bar = panel.tool_row = ToolRow(panel, "graph")  # the tools that do not fit go under its "More" menu
    panel.back_button = tool_button("◀ Back", "Return to the parent graph", views.go_back, panel)
    panel.graph_combo = QComboBox(panel)
    panel.graph_combo.setToolTip("Graphs in this model (OM sub-models, functions)")
    panel.graph_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    panel.graph_combo.setMaximumWidth(260)
    panel.graph_combo.activated.connect(lambda index: views.choose_graph(panel.graph_combo.itemData(index)))
    panel.crumb = ElidedLabel("", panel, separator=" › ", keep_end=True)  # the deepest levels stay
    bar.addWidget(panel.back_button)
    bar.addWidget(panel.graph_combo)
    bar.addWidget(panel.crumb, 1)
    panel._bar_buttons = {}  # text -> QToolButton
    for text, tip, handler in (
            ("Fit", "Fit the graph in the view (F)", lambda: views.active.canvas.fit()),
            ("Expand", "Expand every group (lays out every node)", views.expand_all),
            ("Collapse", "Collapse to the top-level groups", views.collapse_all),
            ("▲ Up", "Highlight everything upstream of the selected node", lambda: panel.trace(False)),
            ("▼ Down", "Highlight everything downstream of the selected node", lambda: panel.trace(True)),
            ("Clear", "Clear highlights and the overlay", panel.clear_highlights),
            ("Overlay…", "Colour nodes by a Model Explorer node-data JSON", panel.ask_overlay),
            ("Compare…", "Show another model side by side; nodes on one side only are marked",
             panel.ask_compare),
            ("Convert…", "Open the model on screen in the Converter (ONNX options, or ATC for the NPU)",
             tools.convert),
            ("Profile", "Profile the ONNX model on screen with ONNX Runtime on this machine (seeded random "
             "inputs, CPU) and show the timeline and per-op times in the Profiler", tools.profile),
            ("FP16 check", "Run the ONNX model on screen in FP32 and in FP16 simulation with the same seeded "
             "input and compare every op in the Accuracy panel (each op's pass / fail verdict comes back as an "
             "overlay)",
             tools.check_fp16),
            ("Run shapes", "Run the ONNX model once in ONNX Runtime (random inputs, CPU) and show the "
             "shapes it produced instead of the declared ones", lambda: tools.run_shapes()),  # not clicked's bool
            ):
        panel._bar_buttons[text] = tool_button(text, tip, handler, panel)
        bar.addWidget(panel._bar_buttons[text])
    panel.direction_button = tool_button("⇄ Across", "Lay the graph out left to right (long chains read across a "
                                         "wide screen); again for top to bottom", lambda: panel.set_direction(
                                         "TB" if views.direction == "LR" else "LR"), panel)
    panel.direction_button.setCheckable(True)
    bar.addWidget(panel.direction_button)
    menu = QMenu(panel)
    menu.addAction("Export view…", lambda: tools.ask_export(False))
    menu.addAction("Export whole graph (every group expanded)…", lambda: tools.ask_export(True))
    export = menu_button(panel, "Export ▾", "Export as SVG or PNG: the view as shown, or the whole graph", menu)
    bar.addWidget(export)
    bar.set_shown(panel.graph_combo, False)  # shown for models with several graphs
    return bar
