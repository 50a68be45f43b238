"""Profiler panel on real-model situations: dynamic input dims ask for sizes, warnings and the
timeline source are shown, one-sided compare rows are not coloured."""

from __future__ import annotations

import json
import shutil

import pytest
from PySide6.QtCore import Qt

from studio.core import formats
from studio.ui.panels.profiler.panel import ProfilerPanel

from profiler_helpers import dynamic_detector  # the generated dynamic model


@pytest.fixture
def panel(make_panel):
    return make_panel(ProfilerPanel, size=(1100, 600))


def open_and_wait(qtbot, panel, path):
    count = len(panel.profiles)
    panel.open_file(formats.detect(path))
    qtbot.waitUntil(lambda: len(panel.profiles) == count + 1, timeout=15000)
    return panel.profiles[-1]


def summary(panel) -> dict[str, str]:
    return {row[0]: row[1] for row in panel.summary.model.rows}


def test_one_click_profile_asks_for_dynamic_sizes_and_shows_them(qtbot, panel, tmp_path):
    model = dynamic_detector(tmp_path / "det.onnx")
    panel.iterations, panel.warmup = 2, 1
    panel.profile_model(model)  # what the graph panel's Profile button does
    qtbot.waitUntil(lambda: panel.shape_dialog is not None and panel.shape_dialog.isVisible(), timeout=15000)
    dialog = panel.shape_dialog
    boxes = dialog.boxes["x"]
    assert [b.text() for b in boxes] == ["", "3", "", ""]  # static dims prefilled, dynamic ones empty
    assert [b.placeholderText() for b in boxes[::2]] == ["N", "H"] and boxes[1].isReadOnly()
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    assert not ok.isEnabled()  # nothing guessed: OK waits for every size
    dialog.set_dims("x", [1, 3, 96, 128])
    assert ok.isEnabled()
    assert not panel.profiles  # no run happened with made-up sizes
    ok.click()
    qtbot.waitUntil(lambda: bool(panel.profiles), timeout=30000)
    assert panel.last_run.inputs["x"].shape == [1, 3, 96, 128]
    facts = summary(panel)
    assert facts["Input x"].startswith("1×3×96×128 float32")
    saved = json.loads((panel.profiles[0].path / "studio_profile.json").read_text())
    assert saved["inputs"]["x"]["shape"] == [1, 3, 96, 128]
    assert "x 1×3×96×128" in panel.info.toolTip()


def test_cancelling_the_shape_dialog_runs_nothing(qtbot, panel, tmp_path):
    model = dynamic_detector(tmp_path / "det.onnx")
    panel.profile_model(model)
    qtbot.waitUntil(lambda: panel.shape_dialog is not None and panel.shape_dialog.isVisible(), timeout=15000)
    panel.shape_dialog.reject()
    assert "cancelled" in panel.info.text() and not panel.profiles
    from studio.core.paths import cache_dir

    assert not (cache_dir() / "profiles").exists() or not any((cache_dir() / "profiles").iterdir())


def test_database_warning_and_loose_folder_source_are_shown(qtbot, panel, ascend_fixtures, tmp_path):
    folder = tmp_path / "msprof"
    folder.mkdir()
    for name in ("msprof_0.db", "op_summary_legacy_header.csv", "trace_view_tiny.json"):
        shutil.copyfile(ascend_fixtures / "msprof" / name, folder / name)
    loaded = open_and_wait(qtbot, panel, folder)
    assert loaded.trace.size > 0
    assert panel.info.text().startswith("⚠ 1 warning")
    rows = panel.summary.model.rows
    assert rows[0][0] == "Warning" and "outside the collection window" in rows[0][1]
    facts = summary(panel)
    assert "msprof_0.db" in facts["Timeline source"] and "trace_view_tiny.json (0 slices)" in facts["Not drawn"]
    assert "outside_session" in [panel.stats_tab.kind.itemText(i) for i in range(panel.stats_tab.kind.count())]
    assert sorted(p.name for p in folder.iterdir()) == ["msprof_0.db", "op_summary_legacy_header.csv",
                                                         "trace_view_tiny.json"]


def test_compare_tab_marks_one_sided_rows_without_colour(qtbot, panel, tmp_path):
    def trace(path, names, dur):
        events = [{"ph": "X", "name": n, "pid": 1, "tid": 1, "ts": i * 100, "dur": dur} for i, n in enumerate(names)]
        path.write_text(json.dumps(events))
        return path

    open_and_wait(qtbot, panel, trace(tmp_path / "base.json", ["conv", "gone"], 10))
    open_and_wait(qtbot, panel, trace(tmp_path / "new.json", ["conv", "added"], 20))
    panel.compare_tab.button.click()
    qtbot.waitUntil(lambda: panel.compare_tab.ops.model.rowCount() == 3, timeout=5000)
    table = panel.compare_tab.ops.model
    status = {row[0]: row[1] for row in table.rows}
    assert status == {"conv": "both", "gone": "only in base", "added": "only in new"}
    colour_col = table.colour_column
    for r, row in enumerate(table.rows):
        colour = table.data(table.index(r, colour_col), Qt.ItemDataRole.ForegroundRole)
        if row[0] == "conv":
            assert colour is not None and colour.name().lower() == "#c62828"  # slower: red
        else:
            assert colour is None  # one-sided: neither green nor red
    assert "Per iteration" in panel.compare_tab.summary.text()
