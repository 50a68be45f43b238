"""The roofline as a pyqtgraph scatter: the device's roof and one point per op; click -> the op.

Imported when a report is first shown, so the window opens without pyqtgraph.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

BOUND_COLOURS = {"compute-bound": (61, 111, 182), "memory-bound": (181, 74, 60), "latency-bound": (138, 143, 153),
                 "compute-region": (157, 182, 221), "memory-region": (227, 168, 159), "above-roof": (212, 160, 23)}


GIGA = 1e9  # the y axis is in GFLOP/s


class RooflinePlot(QWidget):
    """Log-log FLOP/s against FLOP/byte. Measured ops sit at their achieved rate (filled), unmeasured
    ones on their roof (hollow).

    Signals:
        op_clicked(str): the node name of a clicked point.
    """

    op_clicked = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.plot = pg.PlotWidget(self)
        self.plot.setBackground(None)
        self.plot.setLogMode(True, True)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setLabel("bottom", "arithmetic intensity (FLOP/byte)")
        self.plot.setLabel("left", "GFLOP/s")  # values are plotted in GFLOP/s: no "(x1e+09)" on the axis
        for side in ("left", "bottom"):
            self.plot.getAxis(side).enableAutoSIPrefix(False)
        self.plot.addLegend(offset=(10, 10))
        self.info = QLabel("Run the advisor on a model to see its ops on the device's roofline.", self)
        self.info.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.info)
        layout.addWidget(self.plot, 1)
        self.points: list = []

    def show_report(self, report) -> None:
        """Draw the report's roofline (clears the previous one)."""
        self.plot.clear()
        self.points = [p for p in report.roofline if p.intensity > 0]
        device = report.device or {}
        peak = float(device.get("fp32_flops") or device.get("fp16_flops") or 0)
        bw = float(device.get("bandwidth") or 0)
        if not self.points or not peak or not bw:
            self.info.setText("No op with known shapes (or no device peaks): nothing to place on a roofline.")
            return
        xs = [p.intensity for p in self.points]
        lo, hi = min(xs) / 2, max(max(xs) * 2, peak / bw * 4)
        from PySide6.QtCore import Qt

        from studio.tools.advisor.roofline import memory_roofs, roof_caption

        ridge = peak / bw
        for k, (label, level) in enumerate(memory_roofs(device)):
            pen = pg.mkPen((40, 40, 40), width=2) if k == 0 else pg.mkPen((150, 150, 150), width=1, style=Qt.DashLine)
            self.plot.plot([lo, peak / level, hi], [lo * level / GIGA, peak / GIGA, peak / GIGA], pen=pen,
                           name=f"{device.get('name')} roof" if k == 0 else None)
        for bound, colour in BOUND_COLOURS.items():
            chosen = [(i, p) for i, p in enumerate(self.points) if p.bound == bound]
            if not chosen:
                continue
            ys = [p.achieved_flops or p.attainable_flops for _, p in chosen]
            measured = [p.time_us for _, p in chosen]
            brushes = [pg.mkBrush(*colour) if t else pg.mkBrush(255, 255, 255, 0) for t in measured]
            # a PlotDataItem (not a bare ScatterPlotItem) so the plot's log mode applies to it
            item = self.plot.plot([p.intensity for _, p in chosen], [max(y, 1.0) / GIGA for y in ys], pen=None,
                                  symbol="o", symbolSize=9, symbolPen=pg.mkPen(*colour, width=1.5),
                                  symbolBrush=brushes, data=[i for i, _ in chosen], name=bound)
            item.scatter.opts["hoverable"] = True
            item.scatter.opts["tip"] = lambda x, y, data: self._tip(data)
            item.sigPointsClicked.connect(self._on_clicked)
        measured = sum(1 for p in self.points if p.time_us)
        caption = roof_caption(getattr(report, "roofline_check", {}), str(device.get("name")))
        self.info.setText(f"{len(self.points)} ops on {device.get('name')} "
                          f"(peak {peak / 1e9:,.1f} GFLOP/s, {bw / 1e9:,.1f} GB/s, ridge {ridge:.1f} FLOP/B"
                          + ("; dashed: the bandwidth at smaller working sets, each op judged at its own"
                             if len(memory_roofs(device)) > 1 else "") + "); "
                          f"{measured} with measured times. Click a point to show the op in the graph."
                          + (f" <b>{caption}</b>" if caption else ""))

    def _tip(self, index) -> str:
        p = self.points[int(index)]
        t = f"{p.time_us:.1f} us" if p.time_us else "not profiled"
        ratio = f", {p.ratio:.0%} of its roof" if p.ratio is not None else ""
        return f"{p.name} ({p.op_type})\n{p.bound}{ratio}\n{p.flops / 1e6:,.2f} MFLOP, {p.bytes / 1e6:,.3f} MB, {t}"

    def _on_clicked(self, _item, points, *_args) -> None:
        if len(points):
            self.op_clicked.emit(self.points[int(points[0].data())].name)

    def point_count(self) -> int:
        return len(self.points)

