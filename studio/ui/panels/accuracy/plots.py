"""pyqtgraph views of the accuracy panel: the metric scatter and the single-op drill-down.

Imported only when a comparison is first shown, so the window opens without pyqtgraph.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.tools.accuracy.compare import CompareResult
from studio.tools.accuracy.drilldown import Drilldown

# metric key -> (label, threshold attribute or None, higher is better)
SCATTER_METRICS = {"cosine": ("Cosine similarity", "cosine", True),
                   "rel_euclidean": ("Relative Euclidean distance", "rel_euclidean", False),
                   "kl_div": ("KL divergence", "kl_div", False),
                   "rmse": ("RMSE", "rmse", False),
                   "mean_rel_err": ("Mean relative error", "mean_rel_err", False),
                   "max_abs_err": ("Max absolute error", None, False),
                   "mean_abs_err": ("Mean absolute error", None, False),
                   "max_rel_err": ("Max relative error", None, False)}
PASS_COLOUR, FAIL_COLOUR, SELECTED = (46, 160, 67), (218, 54, 51), (255, 200, 0)


class MetricScatter(QWidget):
    """One point per compared row (x = row index, y = the chosen metric) with the threshold line.

    Signals:
        row_clicked(int): the row index of a clicked point.
    """

    row_clicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.metric_box = QComboBox(self)
        for key, (label, _, _) in SCATTER_METRICS.items():
            self.metric_box.addItem(label, key)
        self.metric_box.currentIndexChanged.connect(lambda _i: self._redraw())
        self.plot = pg.PlotWidget(self)
        self.plot.setBackground(None)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setLabel("bottom", "op index (execution order)")
        self.points = pg.ScatterPlotItem(size=7, hoverable=True, tip=None)
        self.points.sigClicked.connect(self._on_points_clicked)
        self.plot.addItem(self.points)
        self.marker = pg.ScatterPlotItem(size=14, pen=pg.mkPen(SELECTED, width=2), brush=None)
        self.plot.addItem(self.marker)
        self.threshold = pg.InfiniteLine(angle=0, movable=False, pen=pg.mkPen((120, 120, 120), style=Qt.PenStyle.DashLine),
                                         label="threshold {value:.4g}", labelOpts={"position": 0.95, "color": (120, 120, 120)})
        self.plot.addItem(self.threshold)
        top = QHBoxLayout()
        top.addWidget(QLabel("Metric:", self))
        top.addWidget(self.metric_box)
        top.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        self._result: CompareResult | None = None
        self._xy: dict[int, tuple[float, float]] = {}

    def set_result(self, result: CompareResult | None) -> None:
        """Show ``result``, by the metric most failing rows break (cosine when none does)."""
        self._result = result
        failing = Counter(name for row in (result.compared if result is not None else [])
                          for name in row.violations if name in SCATTER_METRICS)
        key = failing.most_common(1)[0][0] if failing and "cosine" not in failing else "cosine"
        if not self.show_metric(key):
            self._redraw()

    @property
    def metric(self) -> str:
        """The key of the metric on the y axis."""
        return self.metric_box.currentData()

    def show_metric(self, key: str) -> bool:
        """Put ``key`` on the y axis; False when it already was (nothing redrawn)."""
        index = self.metric_box.findData(key)
        if index < 0 or index == self.metric_box.currentIndex():
            return False
        self.metric_box.setCurrentIndex(index)  # redraws
        return True

    def focus_row(self, row) -> None:
        """Ring ``row``'s point, first switching to a metric it fails when the one shown passes."""
        if row.violations and self.metric not in row.violations:
            failed = next((v for v in row.violations if v in SCATTER_METRICS), None)
            if failed is not None:
                self.show_metric(failed)
        self.select(row.index)

    def select(self, row_index: int | None) -> None:
        """Ring the point of ``row_index`` (or nothing)."""
        point = self._xy.get(row_index) if row_index is not None else None
        self.marker.setData([point[0]] if point else [], [point[1]] if point else [])

    def point_of(self, row_index: int) -> tuple[float, float] | None:
        """Where the point of a row is drawn (None when the row has no finite value)."""
        return self._xy.get(row_index)

    def _redraw(self) -> None:
        key = self.metric_box.currentData()
        label, threshold_attr, _ = SCATTER_METRICS[key]
        self.plot.setLabel("left", label)
        self._xy = {}
        result = self._result
        # Columns and two shared brushes, not a dict and a new brush per point: for a thousand
        # ops the per-point form took over 100 ms on the GUI thread.
        fail, ok = pg.mkBrush(*FAIL_COLOUR, 200), pg.mkBrush(*PASS_COLOUR, 200)
        xs, ys, data, brushes = [], [], [], []
        for row in (result.compared if result is not None else []):
            value = getattr(row.metrics, key)
            if not math.isfinite(value):
                continue
            xs.append(float(row.index))
            ys.append(float(value))
            data.append(row.index)
            brushes.append(fail if row.violations else ok)
            self._xy[row.index] = (float(row.index), float(value))
        self.points.setData(x=np.array(xs, dtype=np.float64), y=np.array(ys, dtype=np.float64),
                            data=np.array(data, dtype=object), brush=brushes, pen=None)
        if result is not None and threshold_attr:
            self.threshold.setValue(getattr(result.thresholds, threshold_attr))
            self.threshold.show()
        else:
            self.threshold.hide()
        self.plot.enableAutoRange()
        self.marker.setData([], [])

    def _on_points_clicked(self, _item, points, _event=None) -> None:
        if len(points):
            self.row_clicked.emit(int(points[0].data()))


class DrilldownView(QWidget):
    """Histograms of both tensors and of the error, the worst elements, a heat map of the error."""

    PLOTS = 3  # pyqtgraph plots it shows; see ``plots``

    def __init__(self, parent=None, plots: list | None = None):
        """``plots``: :data:`PLOTS` ``pg.PlotWidget`` made beforehand (each takes 20-30 ms, so the
        panel makes them one per event-loop turn); made here when not given."""
        super().__init__(parent)
        self.title = QLabel("Select a compared row to see its tensors.", self)
        self.title.setWordWrap(True)
        self.values, self.errors, self.heat = plots or [pg.PlotWidget() for _ in range(self.PLOTS)]
        self.values.setTitle("Values")
        self.values.setBackground(None)
        self.values.addLegend(offset=(5, 5))
        self.errors.setTitle("Error t − g")
        self.errors.setBackground(None)
        self.heat.setTitle("|Error| map")
        self.heat.setBackground(None)
        self.heat.invertY(True)
        self.heat.setAspectLocked(True)
        self.image = pg.ImageItem()
        self.image.setColorMap(pg.colormap.get("viridis"))
        self.heat.addItem(self.image)
        # the scale that says what a colour means (levels follow each tensor shown)
        self.colour_bar = pg.ColorBarItem(colorMap=pg.colormap.get("viridis"), interactive=False, width=12,
                                          label="|error|")
        self.colour_bar.setImageItem(self.image, insert_in=self.heat.getPlotItem())
        self.heat_label = QLabel("", self)
        self.heat_label.setWordWrap(True)
        self.worst = QTableWidget(0, 5, self)
        self.worst.setHorizontalHeaderLabels(["Index", "Golden", "Target", "Abs err", "Rel err"])
        self.worst.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.worst.horizontalHeader().setStretchLastSection(True)
        self.worst.setWordWrap(False)
        self.worst.verticalHeader().hide()
        self.worst.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        heat_box = QWidget(self)
        heat_layout = QVBoxLayout(heat_box)
        heat_layout.setContentsMargins(0, 0, 0, 0)
        heat_layout.addWidget(self.heat, 1)
        heat_layout.addWidget(self.heat_label)
        plots = QSplitter(Qt.Orientation.Horizontal, self)
        for widget in (self.values, self.errors, heat_box, self.worst):
            plots.addWidget(widget)
        plots.setSizes([230, 230, 230, 410])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(plots, 1)
        self.current: Drilldown | None = None

    def show_drilldown(self, data: Drilldown) -> None:
        self.current = data
        self.title.setText(f"<b>{data.name}</b> — golden {list(data.golden_shape)}, target {list(data.target_shape)}")
        self.title.setToolTip(data.name)
        self.values.clear()
        self.values.plot(data.edges, data.golden_hist, stepMode="center", pen=pg.mkPen((80, 140, 255), width=2),
                         name="golden")
        self.values.plot(data.edges, data.target_hist, stepMode="center", pen=pg.mkPen((255, 150, 40), width=2),
                         name="target")
        self.errors.clear()
        self.errors.plot(data.error_edges, data.error_hist, stepMode="center", fillLevel=0,
                         brush=(218, 54, 51, 90), pen=pg.mkPen((218, 54, 51)))
        if data.heat is not None:
            heat = np.nan_to_num(data.heat, nan=0.0, posinf=np.nanmax(np.where(np.isinf(data.heat), np.nan, data.heat))
                                 if np.isfinite(data.heat).any() else 1.0)
            low, high = float(np.min(heat)), float(np.max(heat))
            self.image.setImage(heat.T, autoLevels=False)
            self.colour_bar.setLevels((low, high if high > low else low + 1e-12))
            self.heat.autoRange()
        else:
            self.image.clear()
        self.heat_label.setText(data.heat_label)
        self.worst.setRowCount(len(data.worst))
        for r, item in enumerate(data.worst):
            cells = [str(list(item["index"])), f"{item['golden']:.6g}", f"{item['target']:.6g}",
                     f"{item['abs_err']:.6g}", f"{item['rel_err']:.6g}"]
            for c, text in enumerate(cells):
                cell = QTableWidgetItem(text)
                cell.setToolTip(text)
                self.worst.setItem(r, c, cell)

    def clear(self, message: str) -> None:
        self.current = None
        self.title.setText(message)
        for plot in (self.values, self.errors):
            plot.clear()
        self.image.clear()
        self.worst.setRowCount(0)
        self.heat_label.setText("")
