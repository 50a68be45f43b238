"""The Collectives tab: each rank's time in each group's collectives as a heat map, who waited for
whom and why the slow rank was late, and the ops of the chosen cell — a double-click on one
shows it on that rank's timeline. The report is read by a job (:func:`..jobs.comm_job`)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QLabel, QSplitter, QTextBrowser, QWidget

from studio.ui.panels.cluster.comm_data import METRICS, OP_HEADERS, chosen_ops, findings_html, map_cells, op_rows
from studio.ui.panels.cluster.widgets.tables import fill, small_table
from studio.ui.panels.cluster.widgets.wait_map import WaitMap
from studio.ui.panels.cluster.widgets.parts import column, controls_row, tab_body
from studio.ui.panels.cluster.widgets.when_shown import WhenShown

# Ops listed at once: the longest synchronisation first. 16 ranks of 1M events have ~6,000 ops; a
# table of all of them took its first fill and sizing on the window's thread for a few hundred ms.
SHOWN = 500


class CollectivesTab(QWidget):
    """Signals: jump(str, int, int) — (rank folder, op start ns, op end ns on that rank's clock)."""

    jump = Signal(str, object, object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.report: dict | None = None
        self.step, self.every_step = None, True
        self.cell: tuple[str, int] | None = None
        self.metric = QComboBox(self)
        for key, title, unit in METRICS:
            self.metric.addItem(title, (key, unit))
        self.metric.currentIndexChanged.connect(lambda _i: self._show_map())
        self.map = WaitMap(self)
        self.map.cell_clicked.connect(self._on_cell)
        self.findings = QTextBrowser(self)
        self.table = small_table(OP_HEADERS, self)
        self.table.doubleClicked.connect(self._on_double_click)
        self.table.setToolTip("Double-click an op to see it on its rank's timeline (the Profiler opens the rank)")
        self.cell_label = QLabel("All ops (click a cell for one group and rank)", self)
        top = controls_row(self, ["Cell", self.metric], "Rows: communication groups; columns: ranks. A pale cell "
                                                         "in a dark row: the rank the others waited for.")
        upper = QSplitter(Qt.Orientation.Horizontal, self)
        upper.addWidget(self.map)
        upper.addWidget(self.findings)
        upper.setSizes([640, 560])
        lower = QWidget(self)
        column(lower, 0, self.cell_label, self.table)
        layout = tab_body(self, top, upper, lower, (300, 260))
        self.message = QLabel("", self)
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        # filled when on screen, not behind another tab: the ops, the map, then the findings' text
        self.view = WhenShown(self, self._show_ops, self._show_map, self._show_findings)

    def show_report(self, report: dict | None, message: str = "") -> None:
        """A new report (None: ``message`` says why there is none)."""
        self.report, self.cell = report, None
        self.message.setText(message)
        self.message.setVisible(bool(message))
        self.view.request()

    def set_step(self, step, every_step: bool) -> None:
        """The step chosen in the panel (``every_step``: all of them)."""
        self.step, self.every_step = step, every_step
        self.view.request()

    def _show_findings(self) -> None:
        self.findings.setHtml(findings_html(self.report) if self.report else "")

    def refresh(self) -> None:
        self._show_map()
        self._show_ops()

    def _show_map(self) -> None:
        key, unit = self.metric.currentData()
        groups, ranks, cells = map_cells(self.report or {}, self.step, self.every_step)
        self.map.selected = self.cell
        self.map.set_data(groups, ranks, cells, key, unit)

    def _show_ops(self) -> None:
        group, rank = self.cell if self.cell else (None, None)
        report = self.report or {}
        rows = op_rows(report, self.step, self.every_step, group, rank, SHOWN)
        total = len(chosen_ops(report, self.step, self.every_step, group, rank))
        self._ops = [r[-1] for r in rows]
        fill(self.table, [r[:-1] for r in rows])
        listed = (f" (the {len(rows):,} longest of {total:,} are listed; studio profile cluster DIR --comm --json "
                  "lists every one)") if len(rows) < total else ""
        self.cell_label.setText((f"Ops of rank {rank} in this group, longest synchronisation first" if self.cell
                                 else "All ops, longest synchronisation first (click a cell for one group and rank)")
                                + listed)

    def _on_cell(self, group: str, rank: int) -> None:
        self.cell = (group, rank)
        self._show_ops()

    def _on_double_click(self, index) -> None:
        row = self.table.model().rows[index.row()]
        op = next((o for o in self._ops if o["op"] == row[0] and o["rank"] == row[1]), None)
        folder = ((self.report or {}).get("rank_folders") or {}).get(str(op["rank"])) if op else None
        if folder:
            start = int(round(op["start_us"] * 1000))
            self.jump.emit(folder, start, start + int(round(op["elapse_ms"] * 1e6)))
