"""Compare tab: pick a baseline and a new profile among those opened; deltas sorted by impact."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QPushButton, QTabWidget, QVBoxLayout, QWidget

from studio.tools.profiler.compare import Comparison, row_judgement
from studio.ui.panels.profiler.table import TableWidget

BENCH_COLUMNS = ["Figure", "Baseline", "New", "Speed-up"]
DELTA_COLUMNS = ["Name", "In", "Base / iter (µs)", "New / iter (µs)", "Delta / iter (µs)", "Delta %", "Speed-up",
                 "Change of the median (95 % CI)", "Base count", "New count", "Base avg (µs)", "New avg (µs)"]


class CompareTab(QWidget):
    """Signal compare_requested(int, int): indices of the baseline and new profiles."""

    compare_requested = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.base = QComboBox(self)
        self.new = QComboBox(self)
        for combo in (self.base, self.new):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(12)
        self.rerun = QCheckBox("Time both again here", self)
        self.rerun.setChecked(True)
        self.rerun.setToolTip("When both are local runs made here, time the two models again, interleaved (base, "
                              "new, new, base, ...) with the profiler off, until the change is known to ±2 % or "
                              "10 s pass: two runs made at different times differ by the machine's load alone")
        self.button = QPushButton("Compare", self)
        self.button.clicked.connect(lambda: self.compare_requested.emit(self.base.currentIndex(), self.new.currentIndex()))
        self.summary = QLabel("Open two profiles (a baseline and a new run), pick them here, then Compare.", self)
        self.summary.setWordWrap(True)
        self.ops = TableWidget("Per-op deltas appear here after Compare.", self)
        self.apis = TableWidget("Per-API deltas appear here when both profiles have API data.", self)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.ops, "Per op")
        self.tabs.addTab(self.apis, "Per API")
        self.bench = TableWidget("Both sides are benchmarks: their figures side by side.", self)
        self.tabs.addTab(self.bench, "Benchmark")
        self.tabs.setTabVisible(2, False)
        top = QHBoxLayout()
        top.addWidget(QLabel("Baseline:", self))
        top.addWidget(self.base, 1)
        top.addWidget(QLabel("New:", self))
        top.addWidget(self.new, 1)
        actions = QHBoxLayout()  # a second row: the tab fits a laptop's dock beside the Workspace tree
        actions.addWidget(self.rerun)
        actions.addStretch(1)
        actions.addWidget(self.button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addLayout(actions)
        layout.addWidget(self.summary)
        layout.addWidget(self.tabs, 1)
        self.set_profiles([])

    def set_profiles(self, labels: list[str]) -> None:
        """The profiles that can be compared (by label, in open order)."""
        for combo, default in ((self.base, 0), (self.new, len(labels) - 1)):
            keep = combo.currentIndex()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(labels)
            for i, label in enumerate(labels):
                combo.setItemData(i, label, 3)  # tooltip role: full label
            combo.setCurrentIndex(keep if 0 <= keep < len(labels) and combo is self.base else max(0, default))
            combo.blockSignals(False)
        self.button.setEnabled(len(labels) >= 2)

    def show_result(self, result: Comparison) -> None:
        """Show a comparison's rows: per iteration, one-sided rows marked and not coloured; the
        latency's change with its confidence interval (or "no significant change") first."""
        if result.change is not None:
            verdict = f"Latency: {result.change.describe()} [{result.samples_how}]."
        else:  # no per-iteration samples: no interval, so no verdict either way
            verdict = f"Latency not judged: no interval without per-iteration samples ({result.samples_how})."
        text = (f"Per iteration ({result.base_iterations} baseline vs {result.new_iterations} new iterations; "
                f"{result.iterations_how}): op time {result.op_time_text().replace(' us', ' µs')}")
        notes = f" {result.op_rule.rule[0].upper()}{result.op_rule.rule[1:]}." if result.op_rule else ""
        notes += "".join(f" Inputs differ: {note}." for note in result.input_changes)
        self.summary.setText(f"{verdict} {text}.{notes} Rows sorted by impact |Δ|; "
                             "“only in base/new” rows exist on one side only.")
        self.summary.setToolTip(f"baseline: {result.base}\nnew: {result.new}")
        for table, rows in ((self.ops, result.ops), (self.apis, result.apis)):
            table.set_rows(DELTA_COLUMNS, [_cells(r) for r in rows], colour="Delta %", percent=("Delta %",),
                           first_width=230)

    def show_bench(self, rows: list[dict], base: str = "", new: str = "", change=None) -> None:
        """The figures of two benchmarks (``compare_rows``), or nothing: the Benchmark tab is shown
        only when both sides are benchmarks (an .om on the NPU against ONNX Runtime here).
        ``change`` is the latency's (:class:`studio.core.ab.Change`), when both have per-loop times."""
        self.tabs.setTabVisible(2, bool(rows))
        if not rows:
            self.bench.set_rows([], [])
            return
        self.bench.set_rows(["Figure", f"Baseline: {base}", f"New: {new}", "Speed-up"],
                            [[r["figure"], r["base"], r["new"], r["speedup"]] for r in rows], first_width=120)
        self.tabs.setCurrentWidget(self.bench)
        mean = next((r for r in rows if r["figure"] == "mean_ms"), None)
        if mean and mean["speedup"]:  # the figures the tools measured say it better than op totals
            judged = f"Latency: {change.describe()}. " if change is not None else \
                "Latency not judged: a tool printed no per-loop times, so no interval can be given. "
            self.summary.setText(f"Benchmarks: {new} mean {mean['new']:,.3f} ms against {base} "
                                 f"{mean['base']:,.3f} ms (speed-up x{mean['speedup']:.2f}; > 1: new is faster). "
                                 f"{judged}Per op: one “inference” slice per timed loop, when the tool printed "
                                 "per-loop times (ais_bench prints statistics only).")


def _cells(r) -> list:
    """One table row; the side an op is missing from shows "—", not a measured 0."""
    base_missing, new_missing = r.only_in == "new", r.only_in == "base"
    return [r.name, r.status, None if base_missing else r.base_per_iter_us, None if new_missing else r.new_per_iter_us,
            r.delta_us, None if r.delta_pct is None else r.delta_pct / 100, r.speedup, row_judgement(r),
            r.base_count, r.new_count,
            None if base_missing else r.base_avg_us, None if new_missing else r.new_avg_us]
