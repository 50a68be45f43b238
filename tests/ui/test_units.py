"""Axes and scales name their units: the roofline in GFLOP/s, the error map with a colour scale, table
times with the precision their size earns."""

from __future__ import annotations

import numpy as np


def test_roofline_axis_reads_gflops_with_no_power_of_ten_note(qtbot):
    from studio.tools.advisor.model import Report, RooflinePoint
    from studio.ui.panels.advisor.roofline_plot import RooflinePlot

    plot = RooflinePlot()
    qtbot.addWidget(plot)
    report = Report(roofline=[RooflinePoint("conv", "Conv", 2e9, 1e7, 100.0, "compute", 200.0, 1e10, 5e9, 0.5)],
                    device={"name": "box", "fp32_flops": 1e10, "bandwidth": 1e9})
    plot.show_report(report)
    axis = plot.plot.getAxis("left")
    assert axis.labelText == "GFLOP/s" and not axis.autoSIPrefix
    assert "x1e" not in axis.labelString()
    ys = [y for item in plot.plot.listDataItems() for y in np.asarray(item.yData if item.yData is not None else [])]
    assert np.isclose(ys, 10.0).any() and max(ys) < 1e6  # the 1e10 FLOP/s peak is drawn at 10 GFLOP/s


def test_error_map_has_a_colour_scale_that_follows_the_tensor(qtbot):
    import pyqtgraph as pg

    from studio.tools.accuracy.drilldown import Drilldown
    from studio.ui.panels.accuracy.plots import DrilldownView

    view = DrilldownView()
    qtbot.addWidget(view)
    heat = np.linspace(0.0, 0.25, 64, dtype=np.float32).reshape(8, 8)
    edges = np.linspace(-1, 1, 11)
    view.show_drilldown(Drilldown("conv", (8, 8), (8, 8), edges, np.ones(10), np.ones(10), edges, np.ones(10),
                                  heat=heat, heat_label="slice [:, :]"))
    bars = [item for item in view.heat.getPlotItem().scene().items() if isinstance(item, pg.ColorBarItem)]
    assert bars and bars[0].levels() == (0.0, 0.25)


def test_table_times_carry_the_decimals_their_size_earns():
    from studio.ui.panels.profiler.table import RowsModel

    model = RowsModel()
    model.set_rows(["Name", "Total (µs)", "Share"], [["conv", 115_727.5, 0.5], ["relu", 0.5, 0.1]], percent=("Share",))
    shown = [[model.data(model.index(r, c)) for c in range(3)] for r in range(2)]
    assert shown == [["conv", "115,728", "50.00 %"], ["relu", "0.500", "10.00 %"]]
