"""The cluster panel on the real multi-rank fixtures: its table, heat map and memory chart show the
engines' numbers, bad folders show the engine's message, and a rank opens in the Profiler."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from studio.tools.profiler.cluster import open_cluster
from studio.tools.profiler.memory import open_memory
from studio.ui.panels.cluster import ClusterPanel
from studio.ui.panels.cluster.state import ALL, PARTS
from studio.ui.panels.cluster.widgets.heatmap import cell_tooltip, colour
from studio.ui.panels.cluster.widgets.rank_table import BAR_COLUMN, FIRST_PART
from studio.ui.panels.cluster.widgets.tables import cell_values
from studio.core.serial import to_json
from tests.ui.cluster_helpers import open_report, panel, real, show_tab  # noqa: F401 - the fixtures

QWEN = "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"
TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"
DB = "cluster_pytorch/msinsight_db_2rank_level2/level2"
OUT16 = "cluster_pytorch/cluster_analysis_output_16rank_msinsight"
OUT8 = "cluster_pytorch/cluster_analysis_output_8rank_msprof_analyze"
LEGACY = "msprof_prof_legacy/mindinsight_2dev"


def _open(qtbot, panel: ClusterPanel, folder: Path) -> None:
    open_report(qtbot, panel, folder)
    _map_drawn(qtbot, panel)


def _map_drawn(qtbot, panel: ClusterPanel) -> None:
    """Wait for the heat-map job of the last step/group choice (it runs on a worker)."""
    qtbot.waitUntil(lambda: panel.comm.handle is None or not panel.comm.handle.active, timeout=30000)
    qtbot.wait(10)


def _table(panel: ClusterPanel) -> list[list[str]]:
    model = panel.model
    return [[model.index(r, c).data() for c in range(BAR_COLUMN)] for r in range(model.rowCount())]


@pytest.mark.parametrize("relative", [QWEN, TEXT, DB, OUT16, OUT8, LEGACY])
def test_table_equals_the_engine_json(qtbot, panel, real, relative):
    _open(qtbot, panel, real / relative)
    report = to_json(open_cluster(real / relative))
    assert panel.stack.currentWidget() is panel.tabs
    expected = sorted(report["ranks"], key=lambda r: (r["rank"], str(r["step"])))
    assert len(_table(panel)) == len(expected) > 1
    for shown, row in zip(_table(panel), expected):
        assert shown[0] == str(row["rank"])
        assert shown[1] == ("-" if row["step"] is None else str(row["step"]))
        assert shown[2] == ("-" if row["pp_stage"] is None else str(row["pp_stage"]))
        for (key, _title), text in zip(PARTS, shown[FIRST_PART:]):
            assert text == ("-" if row[key] is None else f"{row[key] / 1000:,.3f}"), key
    # every finding of the engine is shown with its evidence
    text = panel.findings.toPlainText()
    for finding in report["slow_ranks"] + report["slow_links"]:
        assert finding["evidence"] in text


def test_four_ranks_bars_stages_groups_and_findings(qtbot, panel, real):
    _open(qtbot, panel, real / QWEN)
    rows = {r["rank"]: r for r in open_cluster(real / QWEN).ranks}
    scale = max(r["computing_us"] + r["communication_not_overlapped_us"] + r["free_us"] + r["preparing_us"]
                for r in rows.values())
    assert panel.model.scale == pytest.approx(scale)
    tip = panel.model.index(3, BAR_COLUMN).data(Qt.ItemDataRole.ToolTipRole)
    assert "rank 3" in tip and f"Computing: {rows[3]['computing_us'] / 1000:,.3f} ms" in tip
    # the computing part of rank 3's bar is drawn in the computing colour, rank 0's is shorter
    image = panel.table.viewport().grab().toImage()
    rect = panel.table.visualRect(panel.model.index(3, BAR_COLUMN))
    x_end = rect.left() + 4 + (rect.width() - 8) * rows[3]["computing_us"] / scale
    y = rect.center().y()
    assert image.pixelColor(int(x_end) - 3, y).name() == "#3d6fb6"
    rect0 = panel.table.visualRect(panel.model.index(0, BAR_COLUMN))
    assert image.pixelColor(int(x_end) - 3, rect0.center().y()).name() != "#3d6fb6"
    layout = panel.layout_view.toPlainText()
    assert "PP" in layout and "[0, 2], [1, 3]" in layout and "stage 1" in layout
    assert "stage imbalance" in panel.findings.toPlainText()
    # clicking a finding's rank selects it in the table
    panel.findings.rank_clicked.emit(3)
    assert panel.table.selected_row()["rank"] == 3


def test_heat_map_cells_equal_the_matrix_rows(qtbot, panel, real):
    _open(qtbot, panel, real / QWEN)
    show_tab(qtbot, panel, panel.comm)
    matrix = open_cluster(real / QWEN).matrix
    heat = panel.comm.heatmap
    assert heat.ranks == [0, 1, 2, 3]
    combo = panel.comm.group_combo
    assert [combo.itemData(i) for i in range(1, combo.count())] == sorted({m["group"] for m in matrix})
    for i in range(1, combo.count()):
        combo.setCurrentIndex(i)
        _map_drawn(qtbot, panel)
        group = combo.itemData(i)
        rows = [m for m in matrix if m["group"] == group]
        assert len(heat.cells) == len({(m["src"], m["dst"]) for m in rows})
        for m in rows:
            cell = heat.cells[(m["src"], m["dst"])]
            if len([r for r in rows if (r["src"], r["dst"]) == (m["src"], m["dst"])]) == 1:
                assert cell.bandwidth_gbps == m["bandwidth_gbps"]
            assert m["transport"] in cell_tooltip(cell)
        assert cell_values(panel.comm.table) == [[str(m["group"]), m["src"], m["dst"], m["transport"], m["size_mb"],
                                                  m["time_ms"], m["bandwidth_gbps"]] for m in rows]
    combo.setCurrentIndex(0)  # all groups: each cell adds its links up
    _map_drawn(qtbot, panel)
    for (src, dst), cell in heat.cells.items():
        rows = [m for m in matrix if (m["src"], m["dst"]) == (src, dst)]
        assert cell.size_mb == pytest.approx(sum(m["size_mb"] for m in rows))
        assert cell.time_ms == pytest.approx(sum(m["time_ms"] for m in rows))
    # what is painted is the cell's colour
    image = heat.grab().toImage()
    src, dst = max(heat.cells, key=lambda k: heat.cells[k].bandwidth_gbps)
    rect = heat.cell_rect(src, dst)
    assert image.pixelColor(int(rect.left()) + 3, int(rect.top()) + 3) == colour(1.0)
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QApplication, QToolTip

    point = rect.center().toPoint()
    QApplication.sendEvent(heat, QHelpEvent(QEvent.Type.ToolTip, point, heat.mapToGlobal(point)))
    assert QToolTip.text() == cell_tooltip(heat.cells[(src, dst)])
    shown = []
    heat.cell_clicked.connect(lambda s, d: shown.append((s, d)))
    qtbot.mouseClick(heat, Qt.MouseButton.LeftButton, pos=rect.center().toPoint())
    assert shown == [(src, dst)] and panel.table.selected_row()["rank"] == src


def test_sixteen_rank_output_heat_map_and_no_rank_to_open(qtbot, panel, real):
    _open(qtbot, panel, real / OUT16)
    show_tab(qtbot, panel, panel.comm)
    heat = panel.comm.heatmap
    assert heat.ranks == list(range(16))
    link = heat.cells[(0, 8)]
    assert link.transports == ["RDMA"] and "RDMA" in cell_tooltip(link)
    assert heat.log_scale  # LOCAL copies at hundreds of GB/s beside the network links
    panel.select_rank(5)
    assert not panel.profiler_button.isEnabled()
    assert "no rank's timeline" in panel.profiler_button.toolTip()
    show_tab(qtbot, panel, panel.memory_stack)
    assert "No memory view" in panel.memory_message.text()  # msprof-analyze's output has no memory files
    assert "No ASCEND_PROFILER_OUTPUT" in panel.memory_message.text()


def test_memory_peak_marked_at_the_engine_peak(qtbot, panel, real):
    _open(qtbot, panel, real / TEXT)
    show_tab(qtbot, panel, panel.memory_stack)
    memory = open_memory(real / TEXT).devices
    tab = panel.memory_tab
    assert panel.memory_stack.currentWidget() is tab
    assert tab.device_combo.count() == len(memory) == 2
    for index, device in enumerate(memory):
        tab.show_device(index)
        series = tab.devices[index]["series"]
        x0 = series["ts_us"][0]
        assert tab.chart.peak_point == (pytest.approx((device["peak_ts_us"] - x0) / 1000),
                                        device["peak_allocated_mb"])
        xs, ys = tab.chart.curves["allocated"]
        assert max(ys) == device["peak_allocated_mb"]
        assert xs[ys.index(max(ys))] == pytest.approx(tab.chart.peak_point[0])
        assert f"{device['peak_allocated_mb']:,.3f} MB" in tab.summary.text()
        assert cell_values(tab.blocks) == [
            [o["name"], o["size_mb"], (o["alloc_ts_us"] - x0) / 1000,
             "not released" if o["release_ts_us"] is None else (o["release_ts_us"] - x0) / 1000]
            for o in device["top_ops_at_peak"]]
        assert cell_values(tab.modules) == [[m["component"], m["peak_reserved_mb"]] for m in device["modules"]]


def test_module_only_and_static_graph_memory(qtbot, panel, real, tmp_path):
    folder = tmp_path / "job"
    shutil.copytree(real / TEXT, folder)
    shutil.copy(real / "memory/msinsight_static_op_mem/ASCEND_PROFILER_OUTPUT/static_op_mem.csv",
                folder / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT")
    _open(qtbot, panel, folder)
    show_tab(qtbot, panel, panel.memory_stack)
    tab = panel.memory_tab
    static = [i for i, d in enumerate(tab.devices) if d.get("graph") is not None]
    assert len(static) == 2
    tab.show_device(static[1])
    device = tab.devices[static[1]]
    assert tab.chart.peak_point is None and f"node {device['peak_node_index']}" in tab.chart.message.text()
    assert tab.blocks.model().headers[2] == "From node"
    assert [r[:2] for r in cell_values(tab.blocks)] == [[o["name"], o["size_mb"]] for o in device["top_ops_at_peak"]]
    _open(qtbot, panel, real / QWEN)  # module peaks only (the Memory tab on screen: filled at once)
    tab.show_device(0)
    assert tab.chart.peak_point is None and "No allocator samples" in tab.chart.message.text()
    assert len(cell_values(tab.modules)) == len(tab.devices[0]["modules"]) > 0


def test_steps_are_chosen_in_the_step_list(qtbot, panel, real, tmp_path):
    folder = tmp_path / "job"
    shutil.copytree(real / TEXT, folder)
    for rank in (0, 1):  # a second step, as torch_npu writes one row per profiled step
        csv = folder / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv"
        header, row = csv.read_text().splitlines()[:2]
        later = ["51", str(float(row.split(",")[1]) * (2 + rank))] + row.split(",")[2:]
        csv.write_text(f"{header}\n{row}\n{','.join(later)}\n")
    _open(qtbot, panel, folder)
    assert panel.step_combo.isVisibleTo(panel) and panel.step_combo.count() == 3
    assert panel.state.step is ALL and [r[:2] for r in _table(panel)] == [["0", "50"], ["0", "51"], ["1", "50"],
                                                                           ["1", "51"]]
    panel.step_combo.setCurrentIndex(2)  # step 51: rank 1 computes 3x, rank 0 2x the first step
    _map_drawn(qtbot, panel)
    assert [r[:2] for r in _table(panel)] == [["0", "51"], ["1", "51"]]
    assert any(f["rank"] == 1 and "step 51" in f["evidence"] for f in panel.state.findings())
    assert "step 51" in panel.findings.toPlainText() and "step 50," not in panel.findings.toPlainText()
    show_tab(qtbot, panel, panel.comm)
    assert panel.comm.heatmap.cells == {}  # the matrix is step 50's only
    panel.step_combo.setCurrentIndex(1)
    _map_drawn(qtbot, panel)
    assert [r[:2] for r in _table(panel)] == [["0", "50"], ["1", "50"]] and panel.comm.heatmap.cells


def test_bad_folders_show_the_engine_message(qtbot, panel, real, tmp_path):
    (tmp_path / "empty").mkdir()
    _open(qtbot, panel, tmp_path / "empty")
    text = panel.message.text()
    assert panel.stack.currentWidget() is panel.message
    assert "No ranks in this folder" in text and "fix:" in text and "Traceback" not in text
    folder = tmp_path / "cut"
    shutil.copytree(real / TEXT, folder)
    csv = folder / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv"
    csv.write_text(csv.read_text().splitlines()[0] + "\n1,2,3\n")
    _open(qtbot, panel, folder)
    text = panel.message.text()
    assert "step_trace_time.csv" in text and "line 2" in text and "Traceback" not in text
    _open(qtbot, panel, real / "cluster_pytorch")  # two jobs side by side: two folders are rank 0
    assert "Two folders are rank 0" in panel.message.text()
    _open(qtbot, panel, real / QWEN)  # a good folder afterwards shows again
    assert panel.stack.currentWidget() is panel.tabs


def test_open_rank_in_profiler_asks_for_the_rank_folder(qtbot, panel, real):
    _open(qtbot, panel, real / QWEN)
    asked = []
    panel.request_open.connect(asked.append)
    assert not panel.profiler_button.isEnabled()
    panel.select_rank(2)
    assert panel.profiler_button.isEnabled()
    qtbot.mouseClick(panel.profiler_button, Qt.MouseButton.LeftButton)
    assert asked == [real / QWEN / "rank_2_ascend_pt"]
    _open(qtbot, panel, real / LEGACY)
    panel.select_rank(1)
    panel.open_selected_rank()
    assert asked[-1].name.startswith("PROF_") and (asked[-1] / "device_1").is_dir()


def test_window_routes_cluster_folders_here_and_ranks_to_the_profiler(qtbot, make_window, real):
    window = make_window()
    routed = []
    window.file_routed.connect(lambda d: routed.append((d.path, d.format.panel)))
    window.open_paths([real / QWEN])
    qtbot.waitUntil(lambda: routed == [(real / QWEN, "cluster")], timeout=10000)
    panel = window.panels["cluster"]
    qtbot.waitUntil(lambda: panel.state.report is not None, timeout=30000)
    panel.select_rank(2)  # ranks 1 and 3 hold no timeline in this export (they get a notice instead)
    panel.open_selected_rank()
    qtbot.waitUntil(lambda: len(routed) == 2, timeout=10000)
    assert routed[1] == (real / QWEN / "rank_2_ascend_pt", "profiler")
    # the workspace tree's context menu opens a folder as a whole
    tree = window.workspace_tree
    tree.set_folder(real / "cluster_pytorch", "fixtures")
    index = tree.model.index(str(real / QWEN))
    menu = tree.context_menu(index)
    assert menu.actions()[0].text() == "Open Folder in Studio"
    menu.actions()[0].trigger()
    qtbot.waitUntil(lambda: len(routed) == 3, timeout=10000)
    assert routed[2] == (real / QWEN, "cluster")
    assert window.notifier.history == []


def test_look_at_1280x720(qtbot, panel, real, tmp_path):
    """Rendered as `studio screenshot` does: no column cut in the table, every tab drawn."""
    _open(qtbot, panel, real / OUT16)
    header = panel.table.horizontalHeader()
    metrics = header.fontMetrics()
    for column in range(BAR_COLUMN):
        title = panel.model.headerData(column, Qt.Orientation.Horizontal)
        assert header.sectionSize(column) >= metrics.horizontalAdvance(title), title
    assert panel.table.horizontalScrollBar().maximum() == 0
    assert header.sectionSize(BAR_COLUMN) >= 150  # the bars have room
    for index, name in enumerate(("step", "comm", "memory")):
        panel.tabs.setCurrentIndex(index)
        qtbot.wait(20)
        assert panel.grab().save(str(tmp_path / f"cluster_{name}.png"))
    assert panel.step_split.sizes()[0] < panel.step_split.sizes()[1] * 2  # findings keep room under 16 rows
    assert panel.comm.heatmap.cell_rect(15, 15).bottom() <= panel.comm.heatmap.height()
    assert panel.tabs.currentIndex() == 2 and panel.state.step is not ALL  # one step: it is chosen


def _reference_cells(rows):
    """The heat-map cells computed the plain way (a dict walk), to check the numpy grouping against."""
    sums = {}
    for m in rows:
        entry = sums.setdefault((m["src"], m["dst"]), [0.0, 0.0, [], set(), set()])
        entry[0] += m["size_mb"]
        entry[1] += m["time_ms"]
        entry[2].append(m["bandwidth_gbps"])
        entry[3].add(m["transport"])
        entry[4].add(str(m["group"]))
    return {key: (size, time, bws[0] if len(bws) == 1 else (size / time if time > 0 else 0.0), sorted(t), sorted(g))
            for key, (size, time, bws, t, g) in sums.items()}


def test_a_256_rank_map_is_coloured_on_a_worker_and_equals_a_plain_sum(qtbot, panel):
    """65,280 links: the GUI thread only starts the job (it took ~0.6 s there before); every cell
    equals a plain per-pair sum, and every pixel is the colour of its cell's bandwidth."""
    import random

    rng = random.Random(1)
    n = 256
    matrix = [{"src": s, "dst": d, "group": g, "transport": "HCCS" if s // 8 == d // 8 else "RDMA",
               "size_mb": rng.uniform(1, 8), "time_ms": rng.uniform(0.1, 2.0), "step": 1}
              for s in range(n) for d in range(n) if s != d for g in (("dp", "tp") if (s + d) % 97 == 0 else ("dp",))]
    for m in matrix:
        m["bandwidth_gbps"] = m["size_mb"] / m["time_ms"]
    panel.state.report = {"ranks": [{"rank": r, "step": 1} for r in range(n)], "matrix": matrix}
    panel.state.step = panel.state.group = ALL
    handle = panel.comm.refresh_map()
    assert handle.active, "the map is computed by a job, not on the GUI thread"
    _map_drawn(qtbot, panel)
    heat = panel.comm.heatmap
    reference = _reference_cells(matrix)
    assert set(heat.cells) == set(reference)
    for key, (size, time, bandwidth, transports, groups) in reference.items():
        cell = heat.cells[key]
        assert (cell.size_mb, cell.time_ms, cell.bandwidth_gbps) == pytest.approx((size, time, bandwidth))
        assert (cell.transports, cell.groups) == (transports, groups)
    pixels = heat.data.pixels
    for (src, dst) in [(0, 1), (5, 200), (255, 254)] + [max(heat.cells, key=lambda k: heat.cells[k].bandwidth_gbps)]:
        assert pixels[src, dst] == colour(heat.fraction(heat.cells[(src, dst)].bandwidth_gbps)).rgba()
    assert pixels[3, 3] == 0  # no traffic from a rank to itself: a blank cell


def test_empty_panel_says_what_to_open_and_its_button_opens_it(qtbot, panel, real, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    assert panel.stack.currentWidget() is panel.empty and "No cluster open" in panel.empty.text()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(real / QWEN))
    panel.empty.buttons["Open folder of ranks…"].click()
    qtbot.waitUntil(lambda: panel.handle is not None and not panel.handle.active, timeout=30000)
    _map_drawn(qtbot, panel)
    assert panel.stack.currentWidget() is panel.tabs and panel.model.rowCount() == 4
