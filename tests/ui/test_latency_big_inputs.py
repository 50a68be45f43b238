"""A big model opens and a 100k-row statistics table fills and sorts with the work off the GUI
thread: the event loop keeps turning meanwhile, and what is shown is complete and in order.

The stall figures of the same steps (worst and 99th-percentile gap of a 5 ms timer) are measured by
``benchmarks/bench_gui_stalls.py``: they depend on the machine's load, so no test asserts them.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer

from gui_ticks import Ticks
from profiler_helpers import name_stats


def test_opening_a_50k_node_model_runs_in_a_job_while_the_loop_turns(qtbot, make_panel, tmp_path):
    """Reading, grouping and laying out 50k nodes runs in the job; the panel gets a ready view."""
    from studio.tools.graph.synthetic import write_synthetic
    from studio.ui.panels.graph.panel import GraphPanel

    path = write_synthetic(tmp_path / "big.onnx", 50_000)
    panel = make_panel(GraphPanel, size=(1400, 900))
    with Ticks() as ticks:
        panel.open_path(path)
        qtbot.waitUntil(lambda: panel.left.view is not None and not panel.runner.active_jobs, timeout=120_000)
    assert panel.left.model.path == path and len(panel.left.model.main.nodes) >= 50_000
    assert len(ticks.gaps) >= 2, "the GUI thread's timer must tick while the model opens"


def test_a_100k_row_statistics_table_fills_and_sorts_off_the_gui_thread(qtbot):
    """The profiler's statistics tab: rows come ready from the load job; 100k of them are shown and
    sorted by a header click, the sorting in a thread of its own."""
    from studio.tools.profiler.model import Trace
    from studio.ui.jobs import JobRunner
    from studio.ui.panels.profiler.stats_tab import OP_COLUMNS, StatsTab, ready_rows

    JobRunner()  # as in the app: the interpreter switches threads every millisecond
    tab = StatsTab()
    qtbot.addWidget(tab)
    tab.resize(1200, 700)
    tab.show()
    by_name = name_stats(100_000)
    trace = Trace.__new__(Trace)
    trace.tables = {}
    tab.show_stats(trace, by_name, [], {}, ready_rows(by_name, []))
    model = tab.table.model
    assert len(model.rows) == 100_000
    total = OP_COLUMNS.index("Total (µs)")
    done, sorting_when_asked = [], []
    model.sorted.connect(lambda: done.append(True))
    QTimer.singleShot(20, lambda: (tab.table.view.sortByColumn(total, Qt.SortOrder.DescendingOrder),
                                   sorting_when_asked.append(model.sorting)))
    with Ticks() as ticks:
        qtbot.waitUntil(lambda: bool(done), timeout=120_000)
    assert sorting_when_asked == [True], "the click returns at once; the sort goes on in its thread"
    totals = [row[total] for row in tab.table.shown_rows()]
    assert totals == sorted((s.total_us for s in by_name), reverse=True)
    assert len(ticks.gaps) >= 2, "the GUI thread's timer must tick while the rows sort"
