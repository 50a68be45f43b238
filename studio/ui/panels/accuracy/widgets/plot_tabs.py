"""The Accuracy panel's plot tabs: the metric scatter and the drill-down of the selected row.

The pyqtgraph views cost 20-30 ms each to make, so they are made on first use, one piece per
event-loop turn, while the first result waits.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QTabWidget, QWidget


MIN_HEIGHT = 130  # the scatter keeps ~100 px of plot under its tab bar however the panel is squeezed


class PlotTabs(QTabWidget):
    """"Scatter by op" and "Drill-down". Signal row_clicked(int): a point of the scatter was clicked."""

    row_clicked = Signal(int)

    def __init__(self, runner, parent: QWidget | None = None):
        super().__init__(parent)
        self.runner = runner
        self.scatter = self.drilldown = None  # pyqtgraph views, made on first use
        self._drilldown_plots: list = []  # the drill-down's plots, made one per turn before it
        self._drill_handle = None
        self.setMinimumHeight(MIN_HEIGHT)

    @property
    def made(self) -> bool:
        """Both views exist."""
        return self.scatter is not None and self.drilldown is not None

    def ensure(self) -> None:
        """Make both views now."""
        while self._build_next():
            pass

    def _build_next(self) -> bool:
        """Make the next missing piece of the pyqtgraph views; False when both exist (each piece takes
        20-30 ms)."""
        from studio.ui.panels.accuracy.plots import DrilldownView, MetricScatter  # pyqtgraph: on first use

        if self.scatter is None:
            self.scatter = MetricScatter(self)
            self.scatter.row_clicked.connect(self.row_clicked)
            self.addTab(self.scatter, "Scatter by op")
            return True
        if self.drilldown is None:
            import pyqtgraph as pg

            if len(self._drilldown_plots) < DrilldownView.PLOTS:
                self._drilldown_plots.append(pg.PlotWidget())
                return True
            self.drilldown = DrilldownView(self, self._drilldown_plots)
            self.addTab(self.drilldown, "Drill-down")
            return True
        return False

    def when_made(self, then) -> None:
        """Call ``then`` once both views exist, making them one per event-loop turn (together with
        the result they would hold the window up for a tenth of a second)."""
        if self._build_next():
            # A real 10 ms timer, not 0: zero-delay calls run back to back before any timer or
            # paint, so two 30 ms plots made one "turn" apart still held the window up for 70 ms.
            QTimer.singleShot(10, self, lambda: self.when_made(then))
        else:
            then()

    def show_row(self, row) -> None:
        """Ring ``row`` in the scatter and load its tensors into the drill-down (a job)."""
        if row is None or self.scatter is None:
            return
        self.scatter.focus_row(row)  # shows the metric the row fails, e.g. MRE at cosine 0.999998
        if row.golden_file and row.target_file:
            from studio.tools.accuracy.drilldown import compute_drilldown

            if self._drill_handle is not None:
                self._drill_handle.cancel()
            self.drilldown.clear(f"Loading {row.name}…")
            self._drill_handle = self.runner.start(
                f"Drill-down {row.name}",
                lambda cancel, r=row: compute_drilldown(r.name, r.golden_file, r.target_file, cancel=cancel))
            self._drill_handle.finished.connect(self.drilldown.show_drilldown)
            # Why is on the notice board (the runner posts it); the pane only stops saying "Loading…".
            self._drill_handle.failed.connect(lambda exc, _tb: self.drilldown.clear(f"Cannot load {row.name}"))
        else:
            self.drilldown.clear(f"{row.name}: {row.status} — only one side has this tensor"
                                 + (f" ({row.note})" if row.note else ""))
