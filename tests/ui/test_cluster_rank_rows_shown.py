"""The Step time tab shows every rank's row of a small cluster: the split between the rank table and
the findings is set after the findings' text (set before it, the text's layout squeezed the table to
less than two rows of the real 2-rank export)."""

from __future__ import annotations

from cluster_helpers import DB2, open_and_wait, real, show_tab  # noqa: F401 - fixtures

from studio.ui.panels.cluster import ClusterPanel


def test_every_rank_row_is_inside_the_table_view(qtbot, make_panel, real):  # noqa: F811
    panel = make_panel(ClusterPanel, size=(1010, 470))  # its dock in the main window at 1,280 x 720
    open_and_wait(qtbot, panel, real / DB2)
    show_tab(qtbot, panel, panel.step_split)
    table, model = panel.table, panel.table.model()
    assert model.rowCount() == 2
    viewport = table.viewport().rect()
    for row in range(model.rowCount()):
        cell = table.visualRect(model.index(row, 0))
        assert viewport.contains(cell), f"rank row {row} at {cell} is outside the table's view {viewport}"
