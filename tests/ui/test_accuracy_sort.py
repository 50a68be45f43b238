"""The comparison table sorts in its model (Python's sort over keys made once), the proxy only
filters: the order is the metric's, ties keep op order, the selection follows its row, and a new
result keeps the column the user sorted by."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from accuracy_helpers import write_npy_dump


@pytest.fixture
def result(tmp_path):
    from studio.core.jobs import run_job
    from studio.tools.accuracy.compare import compare_dumps

    rng = np.random.default_rng(3)
    for i in range(60):
        a = rng.standard_normal((1, 4, 8, 8), dtype=np.float32)
        noise = np.float32(10.0 ** -(1 + i % 5))  # five levels of error: many ties in the status column
        b = a + noise * rng.standard_normal(a.shape, dtype=np.float32)
        write_npy_dump(tmp_path / "g", [(f"op{i:03}", a)], start=1_700_000_000_000_000 + i)
        write_npy_dump(tmp_path / "t", [(f"op{i:03}", b)], start=1_700_000_000_000_000 + i)
    return run_job(compare_dumps(tmp_path / "g", tmp_path / "t"))


def test_sorting_is_the_model_s_and_the_selection_follows(qtbot, make_panel, result):
    from studio.ui.panels.accuracy import AccuracyPanel

    panel = make_panel(AccuracyPanel)
    panel.set_result(result)
    names = [panel.proxy.index(i, 1).data() for i in range(panel.proxy.rowCount())]
    assert names == [r.name for r in sorted(result.rows, key=lambda r: r.index)]
    panel.select_row(result.compared[17].index)
    chosen = panel.selected_row.name

    panel.table.sortByColumn(7, Qt.SortOrder.DescendingOrder)  # RMSE, largest first
    shown = [panel.proxy.index(i, 0).data(Qt.ItemDataRole.UserRole + 2) for i in range(panel.proxy.rowCount())]
    rmse = [r.metrics.rmse if r.metrics is not None else -np.inf for r in shown]
    assert rmse == sorted(rmse, reverse=True) and len(shown) == len(result.rows)
    assert panel.selected_row.name == chosen  # the selection moved with its row
    current = panel.table.selectionModel().currentIndex()
    assert current.data(Qt.ItemDataRole.UserRole + 2).name == chosen

    # Ties (the status column) keep op order; the filter still works on the sorted rows.
    panel.table.sortByColumn(3, Qt.SortOrder.AscendingOrder)
    rows = [panel.proxy.index(i, 0).data(Qt.ItemDataRole.UserRole + 2) for i in range(panel.proxy.rowCount())]
    statuses = [panel.model._value(r, "status") for r in rows]
    assert statuses == sorted(statuses)
    for a, b in zip(rows, rows[1:]):
        if panel.model._value(a, "status") == panel.model._value(b, "status"):
            assert a.index < b.index
    panel.filter_edit.setText("op00")
    assert [panel.proxy.index(i, 1).data() for i in range(panel.proxy.rowCount())] == \
        sorted([r.name for r in rows if r.name.startswith("op00")],
               key=lambda n: [x.name for x in rows].index(n))
    panel.filter_edit.clear()

    # A new result keeps the sort the user chose.
    panel.table.sortByColumn(4, Qt.SortOrder.AscendingOrder)
    panel.set_result(result)
    cos = [panel.proxy.index(i, 0).data(Qt.ItemDataRole.UserRole + 2) for i in range(panel.proxy.rowCount())]
    values = [r.metrics.cosine for r in cos if r.metrics is not None]
    assert values == sorted(values)
