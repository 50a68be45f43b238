"""The first window fits the screen it opens on: on a laptop's 1,024 × 768, 1,280 × 720 or
1,366 × 768 the status bar (the only sign of a running job), the Log and the menus are on screen;
a geometry saved on a bigger monitor is not restored where it would pass the edges."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect

from studio.ui import window_fit

PANEL_BAR = 24  # a desktop's top bar: the free area starts below it


@pytest.fixture
def screen(monkeypatch):
    """Pretend the screen's free area is ``screen(width, height)`` (the offscreen platform has one size)."""
    def use(width: int, height: int) -> QRect:
        rect = QRect(0, PANEL_BAR, width, height - PANEL_BAR)
        monkeypatch.setattr(window_fit, "available_geometry", lambda at=None: QRect(rect))
        return rect

    return use


def _on_screen(window, widget, free: QRect) -> bool:
    top_left = widget.mapTo(window, QPoint(0, 0)) + window.geometry().topLeft()
    return free.contains(QRect(top_left, widget.size()))


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720), (1366, 768)])
def test_the_first_window_fits_a_laptop_screen(qtbot, make_window, screen, size):
    free = screen(*size)
    window = make_window(restore_layout=True)  # a fresh clone: no saved layout
    qtbot.waitExposed(window)
    qtbot.wait(20)  # the on-screen check runs once the window is shown
    assert free.contains(window.frameGeometry()), (window.frameGeometry(), free)
    assert window.width() >= min(1400, size[0]) - 1 or window.width() >= window.minimumWidth()
    for widget in (window.statusBar(), window.job_status, window.docks["log"], window.menuBar()):
        assert _on_screen(window, widget, free), widget


def test_a_saved_geometry_is_restored_only_where_it_fits(qtbot, make_window, screen):
    screen(1920, 1080)
    big = make_window(restore_layout=True)
    qtbot.waitExposed(big)
    big.resize(1800, 1000)
    qtbot.waitUntil(lambda: big.width() == 1800)
    big.save_layout()
    big.close()

    free = screen(1280, 720)  # the same user on a laptop
    window = make_window(restore_layout=True)
    qtbot.waitExposed(window)
    qtbot.wait(20)
    assert free.contains(window.frameGeometry()), (window.frameGeometry(), free)
    assert window.width() < 1800

    screen(1920, 1080)  # a saved geometry that fits is the user's choice: kept
    window.setGeometry(100, 120, 900, 650)
    qtbot.wait(20)
    saved = window.saveGeometry()
    window.save_layout()
    window.close()
    again = make_window(restore_layout=True)
    qtbot.waitExposed(again)
    # the same rectangle Qt restores from those bytes (it also keeps a window on the real screen)
    reference = make_window(show=False)
    reference.restoreGeometry(saved)
    # (a shown window is never narrower than its minimum size, which the hidden reference ignores)
    expected = reference.geometry()
    expected.setWidth(max(expected.width(), again.minimumSizeHint().width(), again.minimumWidth()))
    expected.setHeight(max(expected.height(), again.minimumSizeHint().height(), again.minimumHeight()))
    assert again.geometry().topLeft() == expected.topLeft()
    assert abs(again.width() - expected.width()) <= 8 and abs(again.height() - expected.height()) <= 8
    assert again.geometry() != window_fit.fitted(QRect(0, PANEL_BAR, 1920, 1080 - PANEL_BAR))
