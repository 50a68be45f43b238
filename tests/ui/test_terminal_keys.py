"""Keys become the bytes an xterm sends; the view pastes, copies and scrolls back."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent

from studio.terminal.vt import Terminal
from studio.ui.panels.terminal.keys import key_bytes
from studio.ui.panels.terminal.view import TerminalView

K, M = Qt.Key, Qt.KeyboardModifier


def press(key, mods=M.NoModifier, text="") -> QKeyEvent:
    return QKeyEvent(QKeyEvent.Type.KeyPress, key, mods, text)


def test_key_bytes():
    assert key_bytes(press(K.Key_Up)) == b"\x1b[A"
    assert key_bytes(press(K.Key_Up), app_cursor_keys=True) == b"\x1bOA"
    assert key_bytes(press(K.Key_Right, M.ControlModifier)) == b"\x1b[1;5C"
    assert key_bytes(press(K.Key_C, M.ControlModifier, "\x03")) == b"\x03"
    assert key_bytes(press(K.Key_Return)) == b"\r" and key_bytes(press(K.Key_Backspace)) == b"\x7f"
    assert key_bytes(press(K.Key_PageUp)) == b"\x1b[5~" and key_bytes(press(K.Key_F1)) == b"\x1bOP"
    assert key_bytes(press(K.Key_F12)) == b"\x1b[24~" and key_bytes(press(K.Key_Delete)) == b"\x1b[3~"
    assert key_bytes(press(K.Key_B, M.AltModifier, "b")) == b"\x1bb"
    assert key_bytes(press(K.Key_unknown, M.NoModifier, "ü")) == "ü".encode()
    assert key_bytes(press(K.Key_Shift, M.ShiftModifier)) == b""


def test_view_sends_keys_pastes_bracketed_and_copies_a_selection(qtbot):
    view = TerminalView()
    qtbot.addWidget(view)
    view.resize(500, 200)
    view.show()
    sent = []
    view.send.connect(sent.append)
    term = Terminal(40, 5)
    term.feed(b"".join(b"row %d\r\n" % i for i in range(12)) + b"\x1b[?2004h$ ")
    view.set_snapshot(term.snapshot())
    qtbot.keyClick(view, K.Key_Tab)            # Tab goes to the shell, not to the next widget
    qtbot.keyClick(view, K.Key_L, M.ControlModifier)
    assert sent == [b"\t", b"\x0c"]
    view.paste("ls\nrm x")
    assert sent[-1] == b"\x1b[200~ls\rrm x\x1b[201~"
    view.select_all()
    assert view.selected_text().split("\n")[:2] == ["row 0", "row 1"]
    qtbot.keyClick(view, K.Key_PageUp, M.ShiftModifier)  # scroll back through the history
    assert view._scrollbar.value() < view._scrollbar.maximum()
    view.grab()  # paints scrollback rows without error
    assert view.paints > 0
