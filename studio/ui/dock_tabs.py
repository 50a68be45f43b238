"""The tabs of the window's dock groups show whole titles.

Qt elides a dock group's tab titles to share the group's width: at 1,024 px the eleven tool panels
read "Gra…", "Accura…", "Deploym…". Whole titles with scroll arrows at the ends read better (as in
an editor's tabs): every title is a word, and the tabs that do not fit are one click away (and in
Tools ›).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMainWindow, QTabBar


def whole_tab_titles(window: QMainWindow) -> None:
    """Make every dock tab bar of ``window`` show whole titles, scrolling when they do not fit.

    Qt makes a group's tab bar when docks are tabified or a layout is restored, so this is called
    again after each of those."""
    for bar in window.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly):
        if bar.elideMode() != Qt.TextElideMode.ElideNone or not bar.usesScrollButtons():
            bar.setElideMode(Qt.TextElideMode.ElideNone)
            bar.setUsesScrollButtons(True)
