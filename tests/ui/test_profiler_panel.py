"""The Profiler panel: open, zoom, hover, select a range, find, click a stat, compare two profiles."""

from __future__ import annotations

import csv
import json

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QToolTip

from studio.core import formats
from studio.ui.panels.profiler import ProfilerPanel
from studio.ui.panels.profiler.timeline import GUTTER, RULER


def trace_file(path, scale=1.0):
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Device"}}]
    t = 0.0
    for i in range(400):
        name = ["conv_with_a_really_long_name_that_will_not_fit_anywhere", "relu", "matmul"][i % 3]
        dur = {"relu": 2.0, "matmul": 10.0}.get(name, 30.0) * scale
        events.append({"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": t, "dur": dur, "args": {"i": i}})
        t += dur + 1
    events.append({"ph": "C", "name": "mem", "pid": 1, "tid": 0, "ts": 0, "args": {"MB": 1}})
    events.append({"ph": "C", "name": "mem", "pid": 1, "tid": 0, "ts": t, "args": {"MB": 3}})
    path.write_text(json.dumps(events))
    return path


@pytest.fixture
def panel(make_panel):
    return make_panel(ProfilerPanel, size=(1100, 600))


def trace_name(view):
    return view.trace.slice_name(view.selected)


def open_and_wait(qtbot, panel, path):
    count = len(panel.profiles)
    panel.open_file(formats.detect(path))
    qtbot.waitUntil(lambda: len(panel.profiles) == count + 1, timeout=10000)


def test_zoom_hover_range_find_and_compare(qtbot, panel, tmp_path, monkeypatch):
    open_and_wait(qtbot, panel, trace_file(tmp_path / "base.json"))
    view = panel.timeline
    view.repaint()
    full = view.t1 - view.t0
    assert view.last_frame_ms > 0
    # W zooms in, S zooms out, A/D pan, wheel zooms at the cursor, f fits
    qtbot.keyClick(view, Qt.Key.Key_W)
    assert view.t1 - view.t0 < full
    t0 = view.t0
    qtbot.keyClick(view, Qt.Key.Key_D)
    assert view.t0 > t0
    qtbot.keyClick(view, Qt.Key.Key_F)
    assert view.t1 - view.t0 == pytest.approx(full, rel=0.01)
    # hover the first slice: the tooltip tells its full name, duration and share
    shown = {}
    monkeypatch.setattr(QToolTip, "showText", lambda pos, text, *a: shown.update(text=text))
    device_row = next(r for r in view.rows if r.kind == "slices")
    y = RULER + device_row.y + device_row.h // 2
    x = int(view.x_of(view.trace.start[0] + view.trace.dur[0] / 2))
    qtbot.mouseMove(view, QPoint(x, y))
    assert "conv_with_a_really_long_name_that_will_not_fit_anywhere" in shown["text"]
    assert "duration 30.00 µs" in shown["text"] and "share" in shown["text"]
    # click selects; Shift+drag selects a range whose aggregate appears in the table
    qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=QPoint(x, y))
    assert view.selected == 0 and panel.graph_button.isEnabled()
    details = dict((r[0], r[1]) for r in panel.details.model.rows)
    assert details["Duration"] == "30.00 µs" and details["args.i"] == "0"
    assert panel.bottom.currentWidget() is panel.details
    qtbot.keyClick(view, Qt.Key.Key_Period)
    assert view.selected == 1 and trace_name(view) == "relu"
    qtbot.keyClick(view, Qt.Key.Key_Comma)
    assert view.selected == 0
    a, b = GUTTER + 10, GUTTER + 300
    qtbot.mousePress(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, QPoint(a, y))
    qtbot.mouseMove(view, QPoint(b, y))
    qtbot.mouseRelease(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, QPoint(b, y))
    qtbot.waitUntil(lambda: panel.range_table.model.rowCount() > 0, timeout=5000)
    assert panel.bottom.currentWidget() is panel.range_table
    t_a, t_b = view.range
    trace = view.trace
    inside = (trace.start <= t_b) & (trace.start + trace.dur >= t_a)
    assert sum(r[1] for r in panel.range_table.model.rows) == int(inside.sum())
    # find with next/previous
    panel.find.setText("relu")
    qtbot.waitUntil(lambda: panel.state.matches.size == 133, timeout=5000)
    panel.find_next(1)
    panel.find_next(1)
    assert trace.slice_name(view.selected) == "relu" and panel.match_label.text() == "2 / 133"
    # the statistics tab: clicking an op selects its slices and can show it in the graph
    requests = []
    panel.links.show_node.connect(lambda model, node: requests.append((model, node)))
    table = panel.stats_tab.table
    names = [row[0] for row in table.model.rows]
    row = names.index("matmul")
    table._on_clicked(table.model.index(row, 0))
    assert view.highlighted.size == 133 and trace.slice_name(view.selected) == "matmul"
    panel.stats_tab.graph_button.click()
    assert requests == [(None, "matmul")]
    # CSV export of the filtered table
    table.filter.setText("relu")
    table.export_csv(tmp_path / "out.csv")
    with (tmp_path / "out.csv").open() as handle:
        exported = list(csv.reader(handle))
    assert exported[0][0] == "Name" and [r[0] for r in exported[1:]] == ["relu"]
    # compare with a second, slower profile
    open_and_wait(qtbot, panel, trace_file(tmp_path / "new.json", scale=2.0))
    assert panel.profile_box.count() == 2 and panel.compare_tab.button.isEnabled()
    panel.compare_tab.button.click()
    qtbot.waitUntil(lambda: panel.compare_tab.ops.model.rowCount() == 3, timeout=5000)
    first = panel.compare_tab.ops.model.rows[0]
    assert first[0] == "conv_with_a_really_long_name_that_will_not_fit_anywhere"
    assert first[1] == "both" and first[6] == pytest.approx(0.5)  # twice as slow (speed-up column)
    # no iteration marks: no latency verdict, so the op times are figures and no speed-up is claimed
    summary = panel.compare_tab.summary.text()
    assert "Latency not judged" in summary and "not a speed-up" in summary and "Op rows unjudged" in summary


def test_collapse_thresholds_and_summary(qtbot, panel, tmp_path):
    open_and_wait(qtbot, panel, trace_file(tmp_path / "t.json"))
    view = panel.timeline
    rows_before = len(view.rows)
    header = view.rows[0]
    qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=QPoint(20, RULER + header.h // 2))
    assert len(view.rows) == 1 and "Device" in view.collapsed
    qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=QPoint(20, RULER + header.h // 2))
    assert len(view.rows) == rows_before and any(r.kind == "counter" for r in view.rows)
    conv = view.trace.name_ids("conv_with_a_really_long_name_that_will_not_fit_anywhere")[0]
    red = view.state.colours[conv]
    panel.red.setValue(95.0)
    panel.green.setValue(90.0)
    assert view.state.colours[conv] != red  # conv (~80 % of time) is no longer red
    facts = dict((r[0], r[1]) for r in panel.summary.model.rows)
    assert facts["Slices"] == "400" and "Device" in facts["Processes"]


def test_empty_and_failed_states(qtbot, panel, tmp_path):
    assert "No profile opened" in panel.info.text()
    panel.timeline.repaint()  # empty state paints its hint without a trace
    bad = tmp_path / "bad.json"
    bad.write_text('[{"ph": "X", "name": "a", "ts": 1')
    panel.open_file(formats.detect(bad))
    qtbot.waitUntil(lambda: "Could not open" in panel.info.text(), timeout=5000)
    assert not panel.profiles


def test_local_profile_sends_a_time_share_overlay_named_as_the_model(qtbot, panel, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    from studio.core.jobs import run_job
    from studio.tools.profiler.local_run import profile_model

    nodes = [helper.make_node("Exp", ["x"], ["e"], name="exp0"), helper.make_node("Sigmoid", ["e"], ["y"], name="sig0")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), model)
    run_job(profile_model(model, tmp_path / "prof", iterations=2, warmup=1))
    overlays = []
    panel.links.overlay.connect(overlays.append)
    open_and_wait(qtbot, panel, tmp_path / "prof")
    assert overlays and overlays[0].model == model.resolve()
    assert {"exp0", "sig0"} <= set(overlays[0].values) and overlays[0].thresholds == [5.0, 10.0]
    assert overlays[0].unit == "%" and 0 < max(overlays[0].values.values()) <= 100  # percent, as labelled
    requests = []
    panel.links.show_node.connect(lambda m, node: requests.append((m, node)))
    panel._show_in_graph("exp0_nchwc")
    assert requests == [(model.resolve(), "exp0")]


def test_counter_hover_and_summary_only_profile(qtbot, panel, tmp_path, ascend_fixtures, monkeypatch):
    open_and_wait(qtbot, panel, trace_file(tmp_path / "t.json"))
    view = panel.timeline
    shown = {}
    monkeypatch.setattr(QToolTip, "showText", lambda pos, text, *a: shown.update(text=text))
    counter = next(r for r in view.rows if r.kind == "counter")
    qtbot.mouseMove(view, QPoint(int(view.x_of(view.trace.span_ns / 2)), RULER + counter.y + counter.h // 2))
    assert shown["text"].startswith("mem (MB): 1.000")
    open_and_wait(qtbot, panel, ascend_fixtures / "pytorch_npu" / "api_statistic.csv")
    view.repaint()
    assert not view.rows and panel.stats_tab.kind.count() >= 1


def test_tables_sort_numbers_as_numbers(qtbot):
    from studio.ui.panels.profiler.table import TableWidget

    table = TableWidget("empty")
    qtbot.addWidget(table)
    table.set_rows(["Name", "Total"], [["a", 9.0], ["b", 10.0], ["c", None], ["d", 100.0], ["e", "N/A"]])
    assert [table.model.index(r, 0).data() for r in range(5)] == ["a", "b", "c", "d", "e"]  # order kept
    table.view.sortByColumn(1, Qt.SortOrder.DescendingOrder)
    order = [table.model.index(r, 0).data() for r in range(5)]
    assert order[:3] == ["d", "b", "a"] and set(order[3:]) == {"c", "e"}
    table.filter.setText("b")
    assert table.model.rowCount() == 1 and table.count.text() == "1 of 5 rows"
    table.filter.setText("")
    table.view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    assert [table.model.index(r, 0).data() for r in range(5)] == ["a", "b", "c", "d", "e"]


@pytest.fixture
def two_local_runs(tmp_path):
    """One small model profiled twice here (5 iterations after 3 warm-ups each)."""
    from studio.core.jobs import run_job
    from studio.tools.profiler.local_run import profile_model
    from timing_helpers import tiny_chain

    model = tiny_chain(tmp_path / "chain.onnx", ops=30)
    for name in ("a", "b"):
        run_job(profile_model(model, tmp_path / name, iterations=5, warmup=3))
    return tmp_path / "a", tmp_path / "b"


def test_summary_statistics_and_overlay_of_a_local_run(qtbot, panel, two_local_runs):
    from studio.ui.panels.profiler.state import summary_rows

    first, _ = two_local_runs
    overlays = []
    panel.links.overlay.connect(overlays.append)
    open_and_wait(qtbot, panel, first)
    loaded = panel.profiles[0]
    facts = dict((row[0], row[1]) for row in summary_rows(loaded))
    saved = json.loads((first / "studio_profile.json").read_text())
    assert facts["Latency mean / p50 / p90 / p99"].endswith("(profiler off)")
    assert f"{saved['latency_ms']['p50']:.3f} ms" in facts["Latency mean / p50 / p90 / p99"]
    assert f"{saved['profiled_latency_ms']['p50']:.3f} ms" in facts["Latency with the profiler on, mean / p50"]
    # 5 iterations make too few alternating rounds to measure the overhead: it is not stated
    assert saved["profiler_overhead"] is None and facts["Profiler overhead"].startswith("not measured (5 iterations")
    assert "3 warm-up(s) left out" in facts["Op statistics"]
    # the Statistics tab counts the 5 measured iterations and says so; the overlay's shares are theirs
    qtbot.waitUntil(lambda: panel.stats_tab.table.model.rowCount() > 0, timeout=5000)
    assert {row[1] for row in panel.stats_tab.table.model.rows} == {5}
    assert "5 measured iterations" in panel.stats_tab.counted.text()
    by_name = {s.name: s.share for s in loaded.by_name}
    assert overlays and sum(overlays[0].values.values()) == pytest.approx(100 * sum(by_name.values()))


def test_compare_tab_times_both_runs_again_and_judges_the_change(qtbot, panel, two_local_runs):
    first, second = two_local_runs
    open_and_wait(qtbot, panel, first)
    open_and_wait(qtbot, panel, second)
    assert panel.compare_tab.rerun.isChecked()
    panel.compare_tab.button.click()
    qtbot.waitUntil(lambda: panel.compare_tab.summary.text().startswith("Latency:"), timeout=60000)
    text = panel.compare_tab.summary.text()
    assert "timed again here, interleaved" in text and "CI" in text
    assert "no significant change" in text  # one model twice: within the noise
    panel.compare_tab.rerun.setChecked(False)
    panel.compare_tab.summary.setText("")
    panel.compare_tab.button.click()
    qtbot.waitUntil(lambda: panel.compare_tab.summary.text().startswith("Latency:"), timeout=10000)
    assert "runs timed with the profiler off" in panel.compare_tab.summary.text()
