"""A device's allocated and reserved memory over time, with the peak marked, beside the process's
and the whole device's memory (NPU_MEM), and a draggable interval whose blocks the tab lists.

Time is in ms from the device's first sample; the curve is the one the memory engine thinned
(its peak kept), so the marker sits on a drawn point. Imported when the memory tab is first
filled, so the window opens without pyqtgraph.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QStackedLayout, QWidget

ALLOCATED, RESERVED, PEAK = (61, 111, 182), (214, 125, 46), (181, 40, 50)
PROCESS, DEVICE, REGION = (120, 120, 120), (90, 150, 90), (61, 111, 182, 40)
# The interval first selected: the stretch before the peak, this share of the profile long.
FIRST_INTERVAL = 0.1


class MemoryChart(QWidget):
    """The curve of one device (``show_device``) or a message where there is none.

    Signals: interval_changed(float, float) — the selected interval, ms from the first sample, each
    time the user lets go of the region (and once when a device is shown).
    """

    interval_changed = Signal(float, float)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.plot = pg.PlotWidget(self)
        self.plot.setBackground(None)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setLabel("bottom", "time from the first sample (ms)")
        self.plot.setLabel("left", "MB")
        self.plot.addLegend(offset=(10, -10))  # bottom left: the curves run high and the peak sits late
        self.plot.setMouseEnabled(x=True, y=False)
        self.message = QLabel(self)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.stack = QStackedLayout(self)
        self.stack.addWidget(self.plot)
        self.stack.addWidget(self.message)
        self.peak_point: tuple[float, float] | None = None   # (ms, MB) of the marker
        self.curves: dict[str, tuple[list[float], list[float]]] = {}
        self.region = None

    def interval(self) -> tuple[float, float] | None:
        """The selected interval in ms from the first sample (None without a curve)."""
        return None if self.region is None else tuple(sorted(self.region.getRegion()))

    def set_interval(self, start_ms: float, end_ms: float) -> None:
        """Select ``[start_ms, end_ms]`` (as if dragged there)."""
        if self.region is not None:
            self.region.setRegion((start_ms, end_ms))
            self._on_region()

    def _on_region(self, *_args) -> None:
        self.interval_changed.emit(*self.interval())

    def show_message(self, text: str) -> None:
        self.plot.clear()
        self.peak_point, self.curves, self.region = None, {}, None
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
        upper = 0.0
        for key, colour, name in (("app", PROCESS, "process (APP)"), ("device", DEVICE, "device total (NPU_MEM)")):
            if series.get(f"{key}_mb"):
                px_ = [(t - t0) / 1000 for t in series[f"{key}_ts_us"]]
                self.curves[key] = (px_, series[f"{key}_mb"])
                self.plot.plot(px_, series[f"{key}_mb"], pen=pg.mkPen(colour, width=1.2, style=Qt.PenStyle.DotLine),
                               name=name)
                upper = max(upper, max(series[f"{key}_mb"]))
        px, py = (device["peak_ts_us"] - t0) / 1000, device["peak_allocated_mb"]
        self.peak_point = (px, py)
        self.plot.addItem(pg.InfiniteLine(px, angle=90, pen=pg.mkPen(PEAK, style=Qt.PenStyle.DashLine)))
        self.plot.addItem(pg.ScatterPlotItem([px], [py], size=10, brush=pg.mkBrush(PEAK), pen=None, name="peak"))
        label = pg.TextItem(f"peak {py:,.1f} MB at {px:,.1f} ms", color=PEAK,
                            anchor=(1.0, 1.0) if px > x[-1] / 2 else (0.0, 1.0))
        label.setPos(px, py)
        self.plot.addItem(label)
        self.plot.setXRange(x[0], x[-1], padding=0.02)
        upper = max([upper, py] + [v for v in series["reserved_mb"] if v == v])  # v == v: not NaN
        self.plot.setYRange(0, upper * 1.12, padding=0)
        span = x[-1] - x[0]
        self.region = pg.LinearRegionItem((max(x[0], px - span * FIRST_INTERVAL), px), brush=pg.mkBrush(REGION))
        self.region.setZValue(-10)
        self.region.setToolTip("Drag the interval or its edges: the blocks allocated or freed in it are listed below")
        self.region.sigRegionChangeFinished.connect(self._on_region)
        self.plot.addItem(self.region)
        thinned = series.get("samples", len(ts))
        self.plot.setTitle(f"{len(ts):,} of {thinned:,} samples drawn (each bucket's lowest and highest kept)"
                           if thinned > len(ts) else None, size="8pt")
        self.stack.setCurrentWidget(self.plot)
        self._on_region()


def _no_curve(device: dict) -> str:
    if device.get("peak_node_index") is not None:
        return (f"Static graph (GE's memory plan): no timeline. The peak, {device['peak_allocated_mb']:,.3f} MB, "
                f"is at node {device['peak_node_index']}; the graph's pool is "
                f"{device.get('peak_reserved_mb') or 0:,.3f} MB. The blocks alive there are listed below.")
    return ("No allocator samples for this device (no memory_record.csv / MEMORY_RECORD): "
            "profile with profile_memory=True for the curve. Module peaks are listed below.")
