"""The Idle gaps tab: why each rank's device sat idle — the free time per cause and rank, and every
gap (where, how long, why), longest first; a double-click shows the gap on its rank's timeline.
The report is read by its own job (:func:`..jobs.free_job`) when a folder opens."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QLabel, QWidget

from studio.ui.panels.cluster.jobs import free_job
from studio.ui.panels.cluster.widgets.tables import fill, small_table
from studio.ui.panels.cluster.widgets.parts import controls_row, tab_body
from studio.ui.panels.cluster.widgets.when_shown import WhenShown

ALL = "all"
TOTAL_HEADERS = ["Cause", "Rank", "Gaps", "Total µs", "Share of free"]
GAP_HEADERS = ["Cause", "Rank", "At µs", "Length µs", "Python idle µs", "CANN idle µs", "Why"]


def gap_count(report: dict, rank=ALL, label=ALL) -> int:
    """How many gaps ``rank`` and ``label`` have in all (the report may list only the longest)."""
    return sum(t["gaps"] for t in report.get("totals", []) if (rank == ALL or t["rank"] == rank)
               and (label == ALL or t["label"] == label))


def total_rows(report: dict, rank=ALL) -> list[list]:
    """The totals per cause and rank (one rank's when ``rank`` is given)."""
    return [[t["label"], t["rank"], t["gaps"], t["total_us"], f"{t['share']:.1%}"]
            for t in report.get("totals", []) if rank == ALL or t["rank"] == rank]


def gap_rows(report: dict, rank=ALL, label=ALL) -> list[list]:
    """The gaps of ``rank`` and cause ``label`` (all when ALL), longest first, at most the report's
    ``shown`` (its gaps come longest first); the last item of each row is the gap itself (for the jump)."""
    chosen = (g for g in report.get("gaps", []) if (rank == ALL or g["rank"] == rank)
              and (label == ALL or g["label"] == label))
    gaps = sorted(islice(chosen, report.get("shown")), key=lambda g: -g["duration_us"])
    return [[g["label"], g["rank"], g["offset_us"], g["duration_us"],
             "" if g["python_idle_us"] is None else g["python_idle_us"],
             "" if g["cann_idle_us"] is None else g["cann_idle_us"], g["reason"], g] for g in gaps]


class FreeTab(QWidget):
    """Signals: jump(str, int, int) — (rank folder, gap start ns, gap end ns on that rank's clock)."""

    jump = Signal(str, object, object)

    def __init__(self, runner, parent=None):
        super().__init__(parent)
        self.runner, self.handle, self.report = runner, None, None
        self._generation = 0
        self.rank = QComboBox(self)
        self.cause = QComboBox(self)
        for combo in (self.rank, self.cause):
            combo.currentIndexChanged.connect(lambda _i: self.refresh())
        # the causes sized to their text, the last column (the share, why) takes the rest
        self.totals = small_table(TOTAL_HEADERS, self, stretch=-1)
        self.gaps = small_table(GAP_HEADERS, self, stretch=-1)
        self.gaps.doubleClicked.connect(self._on_double_click)
        self.gaps.setToolTip("Double-click a gap to see it on its rank's timeline (the Profiler opens the rank)")
        top = controls_row(self, ["Rank", self.rank, "Cause", self.cause],
                           "A gap is idle device time between busy stretches (compute and communication). Python "
                           "idle: nothing was dispatched; CANN: the launch layer lagged; memcpy / device task: the "
                           "device ran something else.")
        layout = tab_body(self, top, self.totals, self.gaps, (170, 430))
        self.listed = QLabel("", self)  # says when only the longest gaps are listed
        self.listed.setVisible(False)
        layout.addWidget(self.listed)
        self.message = QLabel("", self)
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        self.view = WhenShown(self, self._render)  # filled when on screen, not behind another tab

    def open_folder(self, folder: Path) -> None:
        """Label ``folder``'s gaps in a job (a previous one is cancelled)."""
        if self.handle is not None:
            self.handle.cancel()
        self._generation += 1
        generation = self._generation
        self.show_report(None, "Labelling the idle gaps …")
        self.handle = self.runner.start(f"Labelling the idle gaps of {Path(folder).name}",
                                        lambda cancel: free_job(Path(folder), cancel))
        self.handle.finished.connect(lambda result: generation == self._generation and self.show_report(*result))
        self.handle.failed.connect(lambda exc, _tb: generation == self._generation
                                   and self.show_report(None, str(exc)))

    def show_report(self, report: dict | None, message: str = "") -> None:
        """A new report (None: ``message`` says why there is none)."""
        self.report = report
        warnings = (report or {}).get("warnings", [])
        text = message or " ".join(f"⚠ {w}" for w in warnings)
        self.message.setText(text)
        self.message.setVisible(bool(text))
        self.view.request()

    def _render(self) -> None:
        report = self.report or {}
        for combo, values in ((self.rank, sorted({r["rank"] for r in report.get("ranks", [])})),
                              (self.cause, list(dict.fromkeys(t["label"] for t in report.get("totals", []))))):
            combo.blockSignals(True)
            combo.clear()
            combo.addItem("all", ALL)
            for value in values:
                combo.addItem(str(value), value)
            combo.blockSignals(False)
        self.refresh()

    def refresh(self) -> None:
        report = self.report or {}
        rank, label = self.rank.currentData() or ALL, self.cause.currentData() or ALL
        fill(self.totals, total_rows(report, rank))
        rows = gap_rows(report, rank, label)
        self._gaps = [r[-1] for r in rows]
        fill(self.gaps, [r[:-1] for r in rows])
        total = gap_count(report, rank, label)
        self.listed.setText(f"The {len(rows):,} longest of {total:,} gaps are listed; studio profile cluster DIR "
                            f"--free --json lists every one." if len(rows) < total else "")
        self.listed.setVisible(len(rows) < total)

    def _on_double_click(self, index) -> None:
        row = self.gaps.model().rows[index.row()]
        gap = next((g for g in self._gaps if g["rank"] == row[1] and g["offset_us"] == row[2]), None)
        folder = ((self.report or {}).get("rank_folders") or {}).get(str(gap["rank"])) if gap else None
        if folder:
            self.jump.emit(folder, gap["start_ns"], gap["end_ns"])
