"""Small pieces of the Profiler panel's toolbar: tool buttons, the colour-band boxes and their menu."""

from __future__ import annotations

from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QLineEdit, QMenu, QToolButton, QWidget,
                               QWidgetAction)

from studio.ui import style
from studio.ui.widgets.elided_label import ElidedLabel
from studio.ui.widgets.host_button import host_button
from studio.ui.widgets.tool_row import ToolRow, menu_button


def tool(text: str, tip: str, slot, parent: QWidget) -> QToolButton:
    """A tool button with ``text`` and tooltip ``tip`` that calls ``slot`` when clicked."""
    button = QToolButton(parent)
    button.setText(text)
    button.setToolTip(tip)
    button.clicked.connect(slot)
    return button


def percent_box(value: float, tip: str, parent: QWidget) -> QDoubleSpinBox:
    """A 0–100 % box with one decimal."""
    box = QDoubleSpinBox(parent)
    box.setRange(0.0, 100.0)
    box.setDecimals(1)
    box.setSingleStep(1.0)
    box.setSuffix(" %")
    box.setValue(value)
    box.setToolTip(tip)
    box.setMinimumWidth(80)  # "100.0 %" fits
    return box


def colours_button(parent: QWidget, green: QDoubleSpinBox, red: QDoubleSpinBox) -> QToolButton:
    """"Colours ▾": the share bands that colour the slices, in a menu (the row keeps its room)."""
    box = QWidget(parent)
    row = QHBoxLayout(box)
    row.setContentsMargins(style.MARGIN, style.GAP, style.MARGIN, style.GAP)
    for widget in (QLabel("green ≤", box), green, QLabel("red ≥", box), red):
        row.addWidget(widget)
    menu = QMenu(parent)
    holder = QWidgetAction(menu)
    holder.setDefaultWidget(box)
    menu.addAction(holder)
    return menu_button(parent, "Colours ▾", "The op shares that colour slices green, yellow and red", menu)


def build_toolbar(panel) -> ToolRow:
    """Make the Profiler panel's toolbar widgets (as attributes of ``panel``, wired to its slots)
    and return the row that holds them."""
    panel.profile_box = QComboBox(panel)
    panel.profile_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    panel.profile_box.setMinimumContentsLength(16)
    panel.profile_box.currentIndexChanged.connect(panel._on_profile_chosen)
    panel.info = ElidedLabel("No profile opened", panel)  # gives way first; the whole text is its tooltip
    panel.find = QLineEdit(panel)
    panel.find.setPlaceholderText("Find slices by name…")
    panel.find.setClearButtonEnabled(True)
    panel.find.setMinimumWidth(150)  # stays usable when the toolbar is crowded; the info label gives way
    panel.find.returnPressed.connect(lambda: panel.find_next(1))
    panel.find.textChanged.connect(panel._on_find_text)
    panel.prev_button = tool("◀", "Previous match", lambda: panel.find_next(-1), panel)
    panel.next_button = tool("▶", "Next match (Enter)", lambda: panel.find_next(1), panel)
    panel.match_label = QLabel("", panel)
    panel.green = percent_box(5.0, "Slices of ops with at most this share of op self time are green (the run's own ranges are grey)", panel)
    panel.red = percent_box(10.0, "Slices of ops with at least this share of op self time are red "
                            "(yellow between)", panel)
    panel.green.valueChanged.connect(panel._on_thresholds)
    panel.red.valueChanged.connect(panel._on_thresholds)
    panel.fit_button = tool("Fit", "Fit the selection, or the whole trace (F)", lambda: panel.timeline.fit(), panel)
    panel.graph_button = tool("Show in graph", "Select the selected op in the Graph panel",
                              lambda: panel._show_in_graph(panel.state.selected_name), panel)
    panel.graph_button.setEnabled(False)
    panel.run_button = tool("Profile…", "Pick an ONNX model and profile it with ONNX Runtime here or with Studio's engine on an SSH host "
                            "(CPU, seeded random inputs, as `studio profile run`)", panel.runs.pick_model, panel)
    panel.bench_button = tool("Benchmark…", "Time an ONNX model's bare inference (warm-ups, timed loops, "
                              "no profiler) with ONNX Runtime here or with Studio's engine on an SSH host, as "
                              "`studio bench MODEL.onnx [--host NAME]`; the numbers open in Summary and Compare",
                              lambda: panel.ask_bench(), panel)
    # the host actions, shared with the Run menu
    panel.host_button, panel.host_actions = host_button(panel, panel.links, {
        "profile": "Run a run configuration under msprof on its host (or collect the folder a PyTorch script "
                   "writes) and open the PROF_ folder here",
        "bench": "Time an .om with msame or ais_bench where a run configuration runs, optionally next to its "
                 "original .onnx timed here with ONNX Runtime; the numbers open in Summary and Compare"})
    panel.colours_button = colours_button(panel, panel.green, panel.red)

    # Used most first: what does not fit goes under the row's "More" menu, the colour bands first.
    bar = panel.tool_row = ToolRow(panel, "profiler")
    for widget in (panel.run_button, panel.bench_button, panel.host_button, panel.profile_box):
        bar.addWidget(widget)
    bar.addWidget(panel.info, 1)
    for widget in (panel.find, panel.prev_button, panel.next_button, panel.match_label, panel.fit_button,
                   panel.graph_button, panel.colours_button):
        bar.addWidget(widget)
    return bar
