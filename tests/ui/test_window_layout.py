"""The window fits a laptop: its minimum width with every dock shown, and the Workspace tree's share."""

from __future__ import annotations

import pytest


LAPTOP_MIN_WIDTH = 1024
USABLE_TREE_WIDTH = 200  # the Workspace tree shows names, not a column of "…"


@pytest.fixture
def window(qtbot, make_window):
    win = make_window(build_all=True)  # every panel built, not the placeholders of the first frame
    for dock in win.docks.values():
        dock.show()
    qtbot.waitExposed(win)
    return win


def test_minimum_width_with_every_dock_shown_fits_1024(window):
    widths = {name: dock.minimumSizeHint().width() for name, dock in window.docks.items()}
    assert window.minimumSizeHint().width() <= LAPTOP_MIN_WIDTH, widths
    # and no tool panel alone is wider than what is left beside the Workspace tree
    tree = window.docks["workspace"].minimumSizeHint().width()
    assert all(width <= LAPTOP_MIN_WIDTH - tree for width in widths.values()), widths


@pytest.mark.parametrize("size", [(1280, 720), (1024, 700)])
def test_workspace_tree_keeps_a_usable_width(qtbot, window, size):
    window.resize(*size)
    window._apply_default_sizes()
    qtbot.waitUntil(lambda: window.width() == size[0])
    qtbot.wait(50)  # the dock layout settles on the next turn
    assert window.docks["workspace"].width() >= USABLE_TREE_WIDTH
    assert window.docks["graph"].width() >= size[0] - window.docks["workspace"].width() - 40


def test_tools_that_do_not_fit_are_in_the_rows_more_menu(qtbot, make_panel):
    from PySide6.QtWidgets import QToolButton

    from studio.ui.panels.graph import GraphPanel

    panel = make_panel(GraphPanel, size=(420, 500))
    row = panel.tool_row
    qtbot.waitUntil(lambda: bool(row.hidden_widgets()))
    hidden = row.hidden_widgets()
    menu = row.findChild(QToolButton, "qt_toolbar_ext_button").menu()
    menu.aboutToShow.emit()
    menu.aboutToShow.emit()  # opened twice: each stand-in once
    entries = {action.text(): action for action in menu.actions()}
    assert len(entries) == len(menu.actions()) >= len(hidden)
    assert "Export" in entries and entries["Export"].menu() is not None  # a menu button keeps its menu
    # a stand-in does what its button does
    name = next(n for n in ("Expand", "Collapse", "▲ Up", "▼ Down", "Clear") if panel._bar_buttons[n] in hidden)
    clicked = []
    panel._bar_buttons[name].clicked.connect(lambda: clicked.append(name))
    entries[name].trigger()
    assert clicked == [name]
