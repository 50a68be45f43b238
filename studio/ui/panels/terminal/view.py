"""The terminal widget: paints a Snapshot, sends keys, scrolls back, selects, copies and pastes.

It never parses: the session's reader thread turns bytes into immutable snapshots and the widget
only paints the latest one, at most once per frame. Only the visible rows are drawn.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QFontMetrics, QGuiApplication, QKeyEvent, QPainter
from PySide6.QtWidgets import QMenu, QScrollBar, QWidget

from typing import TYPE_CHECKING

from studio.ui.panels.terminal.keys import key_bytes

if TYPE_CHECKING:
    from studio.terminal.vt import Snapshot, Style

BACKGROUND = QColor("#1d1f21")
FOREGROUND = QColor("#d6d6d6")
SELECTION = QColor("#3d6a9e")
# xterm-like palette, readable on the dark background (pyte calls yellow "brown").
PALETTE = {
    "black": "#2e3436", "red": "#cc0000", "green": "#4e9a06", "brown": "#c4a000", "blue": "#3465a4",
    "magenta": "#75507b", "cyan": "#06989a", "white": "#d3d7cf",
    "brightblack": "#555753", "brightred": "#ef2929", "brightgreen": "#8ae234", "brightbrown": "#fce94f",
    "brightblue": "#729fcf", "brightmagenta": "#ad7fa8", "brightcyan": "#34e2e2", "brightwhite": "#eeeeec",
}
_COLOURS: dict[str, QColor] = {}


def colour(name: str, default: QColor) -> QColor:
    """A pyte colour ("default", "red", "ff8700") as a QColor."""
    if name == "default":
        return default
    cached = _COLOURS.get(name)
    if cached is None:
        value = PALETTE.get(name) or (f"#{name}" if len(name) == 6 else None)
        cached = QColor(value) if value else default
        _COLOURS[name] = cached
    return cached


def cell_width(text: str) -> int:
    """Cells a run covers (wide CJK characters take two)."""
    if text.isascii():
        return len(text)
    from wcwidth import wcwidth

    return sum(max(1, wcwidth(c)) for c in text)


class TerminalView(QWidget):
    """Signals: send(bytes) — keys and pastes for the shell; resized(columns, lines)."""

    send = Signal(bytes)
    resized = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.setAttribute(Qt.WidgetAttribute.WA_InputMethodEnabled)
        self.setCursor(Qt.CursorShape.IBeamCursor)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setStyleHint(QFont.StyleHint.TypeWriter)
        font.setPointSize(max(9, font.pointSize()))
        self.setFont(font)
        self._bold = QFont(font)
        self._bold.setBold(True)
        metrics = QFontMetrics(font)
        self.cell_w = max(1, metrics.horizontalAdvance("M"))
        self.cell_h = max(1, metrics.height())
        self._ascent = metrics.ascent()
        self.snapshot: Snapshot | None = None
        self._scrollbar = QScrollBar(Qt.Orientation.Vertical, self)
        self._scrollbar.valueChanged.connect(self.update)
        self._selection: tuple[tuple[int, int], tuple[int, int]] | None = None
        self._drag_from: tuple[int, int] | None = None
        self.paints = 0

    # -- geometry ----------------------------------------------------------------------------
    def grid_size(self) -> tuple[int, int]:
        """(columns, lines) that fit the widget."""
        width = self.width() - self._scrollbar.sizeHint().width() - 4
        return max(2, width // self.cell_w), max(1, (self.height() - 4) // self.cell_h)

    def resizeEvent(self, event) -> None:  # Qt override
        bar = self._scrollbar.sizeHint().width()
        self._scrollbar.setGeometry(self.width() - bar, 0, bar, self.height())
        self.resized.emit(*self.grid_size())
        super().resizeEvent(event)

    def _all_rows(self) -> tuple:
        snap = self.snapshot
        return snap.scrollback + snap.rows if snap else ()

    def _top_row(self) -> int:
        """Index (in scrollback + screen) of the first row shown."""
        return self._scrollbar.value()

    # -- content -----------------------------------------------------------------------------
    def set_snapshot(self, snap: Snapshot) -> None:
        """Show ``snap``; the view follows the output unless the user scrolled back."""
        bar = self._scrollbar
        at_bottom = bar.value() >= bar.maximum()
        self.snapshot = snap
        bar.blockSignals(True)
        bar.setRange(0, len(snap.scrollback))
        bar.setPageStep(snap.lines)
        if at_bottom:  # otherwise the value (a row index from the top) keeps the user's place
            bar.setValue(bar.maximum())
        bar.blockSignals(False)
        self.update()

    def paintEvent(self, event) -> None:  # Qt override
        self.paints += 1
        painter = QPainter(self)
        painter.fillRect(self.rect(), BACKGROUND)
        snap = self.snapshot
        if snap is None:
            return
        rows = self._all_rows()
        top = self._top_row()
        visible = min(snap.lines, (self.height() // self.cell_h) + 1)
        sel = self._normalised_selection()
        for i in range(visible):
            index = top + i
            if index >= len(rows):
                break
            self._paint_row(painter, rows[index], i * self.cell_h + 2, index, sel)
        if snap.cursor_visible and top >= len(snap.scrollback):  # the live screen is shown
            x, y = snap.cursor
            rect = QRect(2 + x * self.cell_w, 2 + y * self.cell_h, self.cell_w, self.cell_h)
            if self.hasFocus():
                painter.fillRect(rect, QColor(214, 214, 214, 160))
            else:
                painter.setPen(FOREGROUND)
                painter.drawRect(rect.adjusted(0, 0, -1, -1))
        painter.end()

    def _paint_row(self, painter: QPainter, row, y: int, index: int, sel) -> None:
        x_cell = 0
        for text, style in row:
            cells = cell_width(text)
            fg, bg = self._colours(style)
            rect = QRect(2 + x_cell * self.cell_w, y, cells * self.cell_w, self.cell_h)
            if bg is not BACKGROUND:
                painter.fillRect(rect, bg)
            if text.strip():
                painter.setFont(self._bold if style.bold else self.font())
                painter.setPen(fg)
                if text.isascii():
                    painter.drawText(rect.x(), y + self._ascent, text)
                else:  # place each character on its own cell so wide characters line up
                    cx = rect.x()
                    for char in text:
                        painter.drawText(cx, y + self._ascent, char)
                        cx += cell_width(char) * self.cell_w
            x_cell += cells
        if sel and sel[0][0] <= index <= sel[1][0]:
            start = sel[0][1] if index == sel[0][0] else 0
            end = sel[1][1] if index == sel[1][0] else max(x_cell, self.snapshot.columns)
            if end > start:
                painter.fillRect(QRect(2 + start * self.cell_w, y, (end - start) * self.cell_w, self.cell_h),
                                 QColor(SELECTION.red(), SELECTION.green(), SELECTION.blue(), 130))

    def _colours(self, style: Style) -> tuple[QColor, QColor]:
        fg = colour(style.fg, FOREGROUND)
        bg = colour(style.bg, BACKGROUND)
        if style.reverse:
            fg, bg = (bg if bg is not BACKGROUND else BACKGROUND), (fg if fg is not FOREGROUND else FOREGROUND)
        return fg, bg

    # -- keyboard ----------------------------------------------------------------------------
    def focusNextPrevChild(self, next: bool) -> bool:  # Qt override: Tab belongs to the shell
        return False

    def keyPressEvent(self, event: QKeyEvent) -> None:  # Qt override
        mods = event.modifiers()
        ctrl_shift = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
        if (mods & ctrl_shift) == ctrl_shift and event.key() == Qt.Key.Key_C:
            self.copy()
            return
        if (mods & ctrl_shift) == ctrl_shift and event.key() == Qt.Key.Key_V:
            self.paste()
            return
        if mods & Qt.KeyboardModifier.ShiftModifier and event.key() in (Qt.Key.Key_PageUp, Qt.Key.Key_PageDown):
            step = self._scrollbar.pageStep() * (-1 if event.key() == Qt.Key.Key_PageUp else 1)
            self._scrollbar.setValue(self._scrollbar.value() + step)
            return
        data = key_bytes(event, self.snapshot.app_cursor_keys if self.snapshot else False)
        if data:
            self._selection = None
            self._scrollbar.setValue(self._scrollbar.maximum())
            self.send.emit(data)

    def inputMethodEvent(self, event) -> None:  # Qt override: composed text (CJK input methods)
        if event.commitString():
            self.send.emit(event.commitString().encode("utf-8"))

    # -- mouse, selection, clipboard ---------------------------------------------------------
    def wheelEvent(self, event) -> None:  # Qt override
        steps = -event.angleDelta().y() // 40 or (1 if event.angleDelta().y() < 0 else -1)
        if self.snapshot and self.snapshot.alternate:  # full-screen programs scroll themselves
            key = b"B" if steps > 0 else b"A"
            prefix = b"\x1bO" if self.snapshot.app_cursor_keys else b"\x1b["
            self.send.emit((prefix + key) * min(abs(steps), 10))
            return
        self._scrollbar.setValue(self._scrollbar.value() + steps)

    def _cell_at(self, pos: QPoint) -> tuple[int, int]:
        column = max(0, (pos.x() - 2) // self.cell_w)
        return self._top_row() + max(0, (pos.y() - 2) // self.cell_h), column

    def mousePressEvent(self, event) -> None:  # Qt override
        if event.button() == Qt.MouseButton.LeftButton:
            self._drag_from = self._cell_at(event.position().toPoint())
            self._selection = None
            self.update()
        elif event.button() == Qt.MouseButton.MiddleButton:
            self.paste(QGuiApplication.clipboard().text(mode=QGuiApplication.clipboard().Mode.Selection))

    def mouseMoveEvent(self, event) -> None:  # Qt override
        if self._drag_from is not None:
            self._selection = (self._drag_from, self._cell_at(event.position().toPoint()))
            self.update()

    def mouseReleaseEvent(self, event) -> None:  # Qt override
        self._drag_from = None
        if self._selection and self.selected_text():
            clipboard = QGuiApplication.clipboard()
            if clipboard.supportsSelection():
                clipboard.setText(self.selected_text(), clipboard.Mode.Selection)

    def contextMenuEvent(self, event) -> None:  # Qt override
        menu = QMenu(self)
        copy = menu.addAction("Copy\tCtrl+Shift+C", self.copy)
        copy.setEnabled(bool(self.selected_text()))
        menu.addAction("Paste\tCtrl+Shift+V", self.paste)
        menu.addAction("Select all", self.select_all)
        menu.exec(event.globalPos())

    def _normalised_selection(self):
        if not self._selection:
            return None
        a, b = sorted(self._selection)
        return (a, b) if a != b else None

    def select_all(self) -> None:
        rows = self._all_rows()
        self._selection = ((0, 0), (max(0, len(rows) - 1), 10**6))
        self.update()

    def selected_text(self) -> str:
        sel = self._normalised_selection()
        if not sel:
            return ""
        rows = self._all_rows()
        lines = []
        for index in range(sel[0][0], min(sel[1][0], len(rows) - 1) + 1):
            text = "".join(t for t, _ in rows[index])
            start = sel[0][1] if index == sel[0][0] else 0
            end = sel[1][1] if index == sel[1][0] else len(text)
            lines.append(text[start:end].rstrip())
        return "\n".join(lines)

    def copy(self) -> None:
        text = self.selected_text()
        if text:
            QGuiApplication.clipboard().setText(text)

    def paste(self, text: str | None = None) -> None:
        text = QGuiApplication.clipboard().text() if text is None else text
        if not text:
            return
        data = text.replace("\r\n", "\r").replace("\n", "\r").encode("utf-8")
        if self.snapshot and self.snapshot.bracketed_paste:  # the shell then won't run it line by line
            data = b"\x1b[200~" + data + b"\x1b[201~"
        self.send.emit(data)

    def sizeHint(self):  # Qt override
        from PySide6.QtCore import QSize

        return QSize(80 * self.cell_w + 24, 24 * self.cell_h + 4)

