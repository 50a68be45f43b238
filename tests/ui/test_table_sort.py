"""A 100k-row statistics table sorts off the GUI thread: same order as a plain sort, no frozen window."""

from __future__ import annotations

from PySide6.QtCore import Qt

from gui_ticks import Ticks
from profiler_helpers import table_rows

from studio.ui.panels.profiler.table import TableWidget, _sort_key, sorted_order


def test_sorted_order_equals_a_stable_sort():
    data = table_rows(20_000)
    for column in range(5):
        keys = [_sort_key(r[column]) for r in data]
        for reverse in (False, True):
            expect = sorted(range(len(keys)), key=keys.__getitem__, reverse=reverse)
            assert sorted_order(keys, reverse, run=1000) == expect, (column, reverse)


def test_big_table_sorts_off_the_gui_thread(qtbot):
    from studio.ui.jobs import JobRunner

    JobRunner()  # as in the app: the interpreter switches threads every millisecond
    table = TableWidget("nothing")
    qtbot.addWidget(table)
    data = table_rows()
    table.set_rows(["Name", "Count", "Total (us)", "Share", "Type"], data)
    for column, order in ((2, Qt.SortOrder.DescendingOrder), (0, Qt.SortOrder.AscendingOrder)):
        before = table.model.all_rows  # a stable sort keeps the previous order among ties
        with Ticks() as ticks, qtbot.waitSignal(table.model.sorted, timeout=30_000):
            table.view.sortByColumn(column, order)
            assert table.model.sorting, "the click returns at once; the sort goes on in its thread"
        descending = order == Qt.SortOrder.DescendingOrder
        expect = sorted(before, key=lambda r: _sort_key(r[column]), reverse=descending)
        assert table.shown_rows() == expect
        assert len(ticks.gaps) >= 2, "the GUI thread's timer must tick while the rows sort"
    table.filter.setText("aclnnop42_")
    assert all("aclnnop42_" in r[0].lower() for r in table.shown_rows()) and table.shown_rows()
    # How long the event loop stalls meanwhile: benchmarks/bench_gui_stalls.py (it depends on load).


def test_new_rows_during_a_sort_win(qtbot):
    table = TableWidget("nothing")
    qtbot.addWidget(table)
    table.set_rows(["Name", "Count", "Total (us)", "Share", "Type"], table_rows())
    table.view.sortByColumn(1, Qt.SortOrder.AscendingOrder)
    table.set_rows(["a"], [[3], [1], [2]])
    qtbot.wait(1500)
    assert table.shown_rows() == [[3], [1], [2]] and not table.model.sorting
