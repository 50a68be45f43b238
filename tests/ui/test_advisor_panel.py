"""The advisor panel: run on a profiled model, findings by severity, links to graph and timeline,
roofline clicks, export, apply fixes, a saved report reopening."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from advisor_helpers import host_sleep_trace, profiled_mish

from studio.core import formats
from studio.ui.jobs import JobRunner
from studio.ui.panels.advisor import AdvisorPanel


@pytest.fixture
def panel(make_panel):
    return make_panel(AdvisorPanel, size=(1200, 800))


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    return profiled_mish(tmp_path_factory.mktemp("panel"), iterations=4)


def _items(panel):
    out = []
    for i in range(panel.tree.topLevelItemCount()):
        top = panel.tree.topLevelItem(i)
        out += [top.child(j) for j in range(top.childCount())]
    return out


def test_advise_shows_findings_links_and_roofline(qtbot, panel, profiled, tmp_path, monkeypatch):
    from studio.tools.advisor import microbench

    monkeypatch.setattr(microbench, "ROUNDS", 1)  # one round of this computer's roofs: the estimator is tested in tools
    model, profile = profiled
    panel.set_inputs(profile=profile)
    panel.run_advisor()
    qtbot.waitUntil(lambda: panel.report is not None, timeout=30000)
    assert panel.edits["model"].text() == str(model)  # filled from the profile
    groups = [panel.tree.topLevelItem(i).text(0) for i in range(panel.tree.topLevelItemCount())]
    assert groups and all(g.split(" ")[0] in ("High", "Medium", "Low") for g in groups)
    mish_item = next(i for i in _items(panel) if "Mish" in i.text(0))
    assert mish_item.checkState(3) == Qt.CheckState.Unchecked  # changes accuracy: not ticked by default
    bn_item = next(i for i in _items(panel) if "BatchNormalization" in i.text(0))
    assert bn_item.checkState(3) == Qt.CheckState.Checked

    shown, overlays = [], []
    panel.links.show_node.connect(lambda m, n: shown.append((m, n)))
    panel.links.overlay.connect(overlays.append)
    panel.tree.setCurrentItem(mish_item)
    assert shown[-1] == (model, "block0/mish/softplus")
    assert set(overlays[-1].values) == set(mish_item.data(0, Qt.ItemDataRole.UserRole + 1).nodes)
    assert "Recommendation" in panel.detail.toHtml()

    assert panel.roofline is not None and panel.roofline.point_count() == len(panel.report.roofline) > 0
    panel.roofline._on_clicked(None, [type("P", (), {"data": lambda self: 0})()])
    assert shown[-1] == (model, panel.roofline.points[0].name)
    assert "Top ops" in panel.performance.toHtml()

    written = panel.export_report(tmp_path / "r.html")
    assert written.read_text().startswith("<!DOCTYPE html>")
    panel.export_report(tmp_path / "r.json")
    panel.report = None
    panel.open_file(formats.detect(tmp_path / "r.json"))
    qtbot.waitUntil(lambda: panel.report is not None, timeout=10000)
    assert len(panel.report.findings) == len(json.loads((tmp_path / "r.json").read_text())["findings"])


def test_time_range_finding_asks_the_timeline(qtbot, panel, tmp_path):
    trace = host_sleep_trace(tmp_path / "sleep.json")
    panel.set_inputs(profile=trace)
    panel.run_advisor()
    qtbot.waitUntil(lambda: panel.report is not None, timeout=30000)
    ranges, focus = [], []
    panel.links.show_time_range.connect(lambda p, a, b: ranges.append((p, a, b)))
    panel.links.focus.connect(focus.append)
    item = next(i for i in _items(panel) if i.text(0).startswith("Device idle"))
    finding = item.data(0, Qt.ItemDataRole.UserRole + 1)
    panel.tree.setCurrentItem(item)
    assert ranges == [(trace, *finding.time_ranges[0])] and not focus
    panel.tree.itemDoubleClicked.emit(item, 0)
    assert focus == ["profiler"]


def test_apply_fixes_runs_the_loop(qtbot, panel, profiled, tmp_path):
    model, profile = profiled
    panel.set_inputs(model=model, profile=profile)
    panel.run_advisor()
    qtbot.waitUntil(lambda: panel.report is not None, timeout=30000)
    assert panel.apply_button.isEnabled()
    panel.apply_fixes(tmp_path / "fixed.onnx")  # only the exact Conv+BN fusion is ticked
    qtbot.waitUntil(lambda: panel.loop_result is not None, timeout=60000)
    assert panel.loop_result.applied.fixes == ["ConvBnFusion"] and panel.loop_result.accuracy_passed
    assert "cosine" in panel.before_after.toPlainText() and "accuracy OK" in panel.verdict.text()
    # the latency's change is an interleaved A/B's, with its interval (or "no significant change")
    change = panel.loop_result.change
    assert change is not None and change.verdict in panel.before_after.toPlainText()
    assert "CI" in panel.before_after.toPlainText() and change.verdict in panel.verdict.text()
    assert panel.report.loop["fixed"] == str(tmp_path / "fixed.onnx")


def test_profiler_zooms_to_a_requested_range(qtbot, make_panel, tmp_path):
    from studio.ui.panels.profiler import ProfilerPanel

    profiler = make_panel(ProfilerPanel, size=(1000, 600))
    trace = host_sleep_trace(tmp_path / "sleep.json", 1.0)
    opened = []
    profiler.request_load.connect(lambda p: (opened.append(p), profiler.open_file(formats.detect(p))))
    profiler.links.show_time_range.emit(trace, 5_000_000, 900_000_000)
    assert opened == [trace]
    qtbot.waitUntil(lambda: profiler.state.pending_range is None and profiler.current is not None, timeout=20000)
    t0, t1 = profiler.timeline.t0, profiler.timeline.t1
    assert t0 <= 5_000_000 and t1 >= 900_000_000 and t1 - t0 < 1.1 * 895_000_000  # zoomed to the range
    qtbot.waitUntil(lambda: profiler.bottom.currentWidget() is profiler.range_table, timeout=20000)


def test_devices_dialog_edits_the_table(qtbot, monkeypatch):
    from studio.tools.advisor.devices import load_devices
    from studio.ui.panels.advisor import devices_dialog
    from studio.ui.panels.advisor.devices_dialog import DevicesDialog

    from studio.tools.advisor import microbench

    warnings = []
    monkeypatch.setattr(devices_dialog.QMessageBox, "warning", lambda *a: warnings.append(a[-1]))
    monkeypatch.setattr(microbench, "ROUNDS", 1)  # one real round: the dialog's wiring, not the estimator

    runner = JobRunner()
    dialog = DevicesDialog(runner)
    qtbot.addWidget(dialog)
    row = next(r for r in range(dialog.table.rowCount()) if dialog.table.item(r, 0).text() == "Ascend 310")
    assert dialog.table.item(row, 1).text() == "8" and dialog.table.item(row, 2).text() == "16"
    dialog.table.item(row, 4).setText("60")
    dialog.save()
    assert load_devices()["Ascend 310"].bandwidth == 60e9 and load_devices()["Ascend 910"].fp16_flops == 256e12
    dialog = DevicesDialog(runner)
    qtbot.addWidget(dialog)
    dialog.measure()
    qtbot.waitUntil(lambda: any(dialog.table.item(r, 0).text() == "this computer"
                                for r in range(dialog.table.rowCount())), timeout=30000)
    from studio.tools.advisor.roof_cache import load_cached

    assert load_cached() is not None  # measured into the roof cache (this test's STUDIO_HOME)
    dialog.table.item(0, 1).setText("fast")
    dialog.save()
    assert dialog.result() == 0 and "not a number" in warnings[-1]  # a bad cell keeps the dialog open
    runner.wait_for_done(5000)


def test_devices_dialog_keeps_the_measured_bandwidth_curve(qtbot):
    """The curve has no cell: saving the table must not drop it (nor the note)."""
    from studio.tools.advisor.devices import THIS_COMPUTER, Device, load_devices
    from studio.tools.advisor.roof_cache import load_cached, save_cached
    from studio.ui.panels.advisor.devices_dialog import DevicesDialog

    curve = [[1 << 20, 200e9], [1 << 27, 60e9]]
    save_cached(Device(THIS_COMPUTER, 4e11, 60e9, fp32_flops=4e11, source="measured", note="n", bandwidths=curve))
    dialog = DevicesDialog(JobRunner())
    qtbot.addWidget(dialog)
    assert any(dialog.table.item(r, 0).text() == THIS_COMPUTER for r in range(dialog.table.rowCount()))
    dialog.save()
    kept = load_cached()[0]  # the measured row stays in the roof cache, curve and note included
    assert kept.bandwidths == curve and kept.note == "n" and THIS_COMPUTER not in load_devices()


def test_roofline_tab_says_when_ops_ran_above_the_roof(qtbot):
    from studio.tools.advisor.model import Report, RooflinePoint
    from studio.ui.panels.advisor.roofline_plot import RooflinePlot

    plot = RooflinePlot()
    qtbot.addWidget(plot)
    report = Report(roofline=[RooflinePoint("conv", "Conv", 2e9, 1e7, 100.0, "above-roof", 200.0, 1e10, 2e13, 2000.0)],
                    device={"name": "slow box", "fp32_flops": 1e10, "bandwidth": 1e9,
                            "bandwidths": [[1 << 20, 8e9], [1 << 27, 1e9]]},
                    roofline_check={"measured": 1, "above": 1, "max_ratio": 2000.0, "above_us": 100.0, "measured_us": 100.0})
    plot.show_report(report)
    assert "1 of 1 measured ops ran above their roof (up to 2000.0x)" in plot.info.text()
    assert "dashed" in plot.info.text() and plot.point_count() == 1
