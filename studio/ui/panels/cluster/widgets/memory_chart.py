"""A device's allocated and reserved memory over time, with the peak marked.

Time is in ms from the device's first sample; the curve is the one the memory engine thinned
(its peak kept), so the marker sits on a drawn point. Imported when the memory tab is first
filled, so the window opens without pyqtgraph.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QStackedLayout, QWidget

ALLOCATED, RESERVED, PEAK = (61, 111, 182), (214, 125, 46), (181, 40, 50)


class MemoryChart(QWidget):
    """The curve of one device (``show_device``) or a message where there is none."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.plot = pg.PlotWidget(self)
        self.plot.setBackground(None)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setLabel("bottom", "time from the first sample (ms)")
        self.plot.setLabel("left", "MB")
        self.plot.addLegend(offset=(-10, -10))  # bottom right: the curves run high, rarely there
        self.plot.setMouseEnabled(x=True, y=False)
        self.message = QLabel(self)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.stack = QStackedLayout(self)
        self.stack.addWidget(self.plot)
        self.stack.addWidget(self.message)
        self.peak_point: tuple[float, float] | None = None   # (ms, MB) of the marker
        self.curves: dict[str, tuple[list[float], list[float]]] = {}

    def show_message(self, text: str) -> None:
        self.plot.clear()
        self.peak_point, self.curves = None, {}
        self.message.setText(text)
        self.stack.setCurrentWidget(self.message)

    def show_device(self, device: dict) -> None:
        """Draw ``device["series"]`` and mark ``peak_allocated_mb`` at ``peak_ts_us``."""
        series = device.get("series") or {}
        ts = series.get("ts_us") or []
        if not ts:
            self.show_message(_no_curve(device))
            return
        self.plot.clear()
        t0 = ts[0]
        x = [(t - t0) / 1000 for t in ts]
        self.curves = {"allocated": (x, series["allocated_mb"]), "reserved": (x, series["reserved_mb"])}
        component = series.get("component") or ""
        self.plot.plot(x, series["reserved_mb"], pen=pg.mkPen(RESERVED, width=1.5), connect="finite",
                       name=f"reserved ({component})")
        self.plot.plot(x, series["allocated_mb"], pen=pg.mkPen(ALLOCATED, width=1.5), connect="finite",
                       name=f"allocated ({component})")
        px, py = (device["peak_ts_us"] - t0) / 1000, device["peak_allocated_mb"]
        self.peak_point = (px, py)
        self.plot.addItem(pg.InfiniteLine(px, angle=90, pen=pg.mkPen(PEAK, style=Qt.PenStyle.DashLine)))
        self.plot.addItem(pg.ScatterPlotItem([px], [py], size=10, brush=pg.mkBrush(PEAK), pen=None, name="peak"))
        label = pg.TextItem(f"peak {py:,.1f} MB at {px:,.1f} ms", color=PEAK,
                            anchor=(1.0, 1.0) if px > x[-1] / 2 else (0.0, 1.0))
        label.setPos(px, py)
        self.plot.addItem(label)
        self.plot.setXRange(x[0], x[-1], padding=0.02)
        upper = max([py] + [v for v in series["reserved_mb"] if v == v])  # v == v: not NaN
        self.plot.setYRange(0, upper * 1.12, padding=0)
        thinned = series.get("samples", len(ts))
        self.plot.setTitle(f"{len(ts):,} of {thinned:,} samples drawn (each bucket's lowest and highest kept)"
                           if thinned > len(ts) else None, size="8pt")
        self.stack.setCurrentWidget(self.plot)


def _no_curve(device: dict) -> str:
    if device.get("peak_node_index") is not None:
        return (f"Static graph (GE's memory plan): no timeline. The peak, {device['peak_allocated_mb']:,.3f} MB, "
                f"is at node {device['peak_node_index']}; the graph's pool is "
                f"{device.get('peak_reserved_mb') or 0:,.3f} MB. The blocks alive there are listed below.")
    return ("No allocator samples for this device (no memory_record.csv / MEMORY_RECORD): "
            "profile with profile_memory=True for the curve. Module peaks are listed below.")
