"""The main window's size on the screen it opens on: the screen's free area (without panels and
docks of the desktop) decides, so the status bar, the Log and the menus are never below or beside
the edge. A saved geometry is restored only where it still fits (a window saved on a big monitor
opens on a laptop's screen at the laptop's size)."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QPoint, QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

PREFERRED = QSize(1400, 900)  # on a screen with room to spare; smaller screens get their whole free area


def available_geometry(at: QPoint | None = None) -> QRect:
    """The free area of the screen at ``at`` (the primary screen when None or off every screen)."""
    screen = QGuiApplication.screenAt(at) if at is not None else None
    screen = screen or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, PREFERRED.width(), PREFERRED.height())


def fitted(available: QRect, preferred: QSize = PREFERRED, decoration: QSize = QSize(0, 0)) -> QRect:
    """The window's client rectangle: ``preferred`` where the screen has room, else the free area,
    less the window manager's frame (``decoration``: frame width and height over the client's);
    centred in the free area."""
    width = min(preferred.width(), available.width() - decoration.width())
    height = min(preferred.height(), available.height() - decoration.height())
    rect = QRect(0, 0, max(1, width), max(1, height))
    rect.moveCenter(available.center())
    return rect


def fits(frame: QRect, available: QRect) -> bool:
    """Whether a window's frame lies wholly inside a screen's free area."""
    return available.contains(frame)


def place(window: QWidget, saved: QByteArray | None = None) -> bool:
    """Size ``window`` for its screen: the ``saved`` geometry where it fits, else :func:`fitted`.

    Returns whether the saved geometry was used.
    """
    if isinstance(saved, QByteArray) and not saved.isEmpty() and window.restoreGeometry(saved):
        if fits(window.frameGeometry(), available_geometry(window.frameGeometry().center())):
            return True
    window.setGeometry(fitted(available_geometry()))
    return False


def keep_on_screen(window: QWidget) -> None:
    """Once shown (the frame of a window manager is known then), shrink and move ``window`` back
    into its screen's free area if its frame passes an edge."""
    frame = window.frameGeometry()
    available = available_geometry(frame.center())
    if fits(frame, available):
        return
    decoration = QSize(frame.width() - window.width(), frame.height() - window.height())
    rect = fitted(available, window.size(), decoration)
    window.resize(rect.size())
    window.move(rect.topLeft() - (window.geometry().topLeft() - frame.topLeft()))
