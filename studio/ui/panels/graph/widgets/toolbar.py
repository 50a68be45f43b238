"""The Graph panel's toolbar and find row."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QMenu, QToolButton, QWidget

from studio.ui.widgets.elided_label import ElidedLabel
from studio.ui.widgets.tool_row import ToolRow, menu_button


def _button(text: str, tip: str, handler, parent: QWidget) -> QToolButton:
    button = QToolButton(parent)
    button.setText(text)
    button.setToolTip(tip)
    button.setAutoRaise(True)
    if handler is not None:
        button.clicked.connect(handler)
    return button


def build_toolbar(panel) -> ToolRow:
    """Make the toolbar (as attributes of ``panel``, wired to its slots) and return it."""
    bar = panel.tool_row = ToolRow(panel, "graph")  # the tools that do not fit go under its "More" menu
    panel.back_button = _button("◀ Back", "Return to the parent graph", panel.go_back, panel)
    panel.graph_combo = QComboBox(panel)
    panel.graph_combo.setToolTip("Graphs in this model (OM sub-models, functions)")
    panel.graph_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    panel.graph_combo.setMaximumWidth(260)
    panel.graph_combo.activated.connect(panel._on_graph_chosen)
    panel.crumb = ElidedLabel("", panel, separator=" › ", keep_end=True)  # the deepest levels stay
    bar.addWidget(panel.back_button)
    bar.addWidget(panel.graph_combo)
    bar.addWidget(panel.crumb, 1)
    panel._bar_buttons = {}  # text -> QToolButton
    for text, tip, handler in (
            ("Fit", "Fit the graph in the view (F)", lambda: panel.active.canvas.fit()),
            ("Expand", "Expand every group (lays out every node)", panel.expand_all),
            ("Collapse", "Collapse to the top-level groups", panel.collapse_all),
            ("▲ Up", "Highlight everything upstream of the selected node", lambda: panel.trace(False)),
            ("▼ Down", "Highlight everything downstream of the selected node", lambda: panel.trace(True)),
            ("Clear", "Clear highlights and the overlay", panel.clear_highlights),
            ("Overlay…", "Colour nodes by a Model Explorer node-data JSON", panel._on_import_overlay),
            ("Compare…", "Show another model side by side; nodes on one side only are marked",
             panel._on_compare_clicked),
            ("Convert…", "Open the model on screen in the Converter (ONNX options, or ATC for the NPU)",
             panel._on_convert_clicked),
            ("Profile", "Profile the ONNX model on screen with ONNX Runtime on this machine (seeded random "
             "inputs, CPU) and show the timeline and per-op times in the Profiler", panel._on_profile_clicked),
            ("FP16 check", "Run the ONNX model on screen in FP32 and in FP16 simulation with the same seeded "
             "input and compare every op in the Accuracy panel (each op's pass / fail verdict comes back as an "
             "overlay)",
             panel._on_fp16_clicked),
            ("Run shapes", "Run the ONNX model once in ONNX Runtime (random inputs, CPU) and show the "
             "shapes it produced instead of the declared ones", panel.run_shapes),
            ):
        panel._bar_buttons[text] = _button(text, tip, handler, panel)
        bar.addWidget(panel._bar_buttons[text])
    panel.direction_button = _button("⇄ Across", "Lay the graph out left to right (long chains read across a "
                                     "wide screen); again for top to bottom", lambda: panel.set_direction(
                                         "TB" if panel.direction == "LR" else "LR"), panel)
    panel.direction_button.setCheckable(True)
    bar.addWidget(panel.direction_button)
    menu = QMenu(panel)
    menu.addAction("Export view…", lambda: panel._on_export(False))
    menu.addAction("Export whole graph (every group expanded)…", lambda: panel._on_export(True))
    export = menu_button(panel, "Export ▾", "Export as SVG or PNG: the view as shown, or the whole graph", menu)
    bar.addWidget(export)
    bar.set_shown(panel.graph_combo, False)  # shown for models with several graphs
    return bar


def build_find_row(panel) -> QHBoxLayout:
    """Make the find row (the box, Regex, previous / next / all, the match count) of ``panel``."""
    find = QHBoxLayout()
    find.setContentsMargins(4, 0, 4, 2)
    panel.find_edit = QLineEdit(panel)
    panel.find_edit.setPlaceholderText("Find node by name, type or tensor (all words must match; \"quoted\" = exact)")
    panel.find_edit.setClearButtonEnabled(True)
    panel.find_edit.returnPressed.connect(panel._on_find)
    panel.regex_box = QCheckBox("Regex", panel)
    panel.find_label = QLabel("", panel)
    panel.find_label.setMinimumWidth(70)
    find.addWidget(panel.find_edit, 1)
    find.addWidget(panel.regex_box)
    find.addWidget(_button("◀", "Previous match (Shift+F3)", lambda: panel.step_match(-1), panel))
    find.addWidget(_button("▶", "Next match (F3)", lambda: panel.step_match(1), panel))
    find.addWidget(_button("All", "Highlight all matches", panel.select_all_matches, panel))
    find.addWidget(panel.find_label)
    return find
