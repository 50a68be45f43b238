"""Key presses to the bytes an xterm sends (what shells, vim, less and top expect)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent

K = Qt.Key
_CURSOR = {K.Key_Up: "A", K.Key_Down: "B", K.Key_Right: "C", K.Key_Left: "D", K.Key_Home: "H", K.Key_End: "F"}
_TILDE = {K.Key_Insert: 2, K.Key_Delete: 3, K.Key_PageUp: 5, K.Key_PageDown: 6, K.Key_F5: 15, K.Key_F6: 17,
          K.Key_F7: 18, K.Key_F8: 19, K.Key_F9: 20, K.Key_F10: 21, K.Key_F11: 23, K.Key_F12: 24}
_SS3 = {K.Key_F1: "P", K.Key_F2: "Q", K.Key_F3: "R", K.Key_F4: "S"}
_SIMPLE = {K.Key_Return: b"\r", K.Key_Enter: b"\r", K.Key_Backspace: b"\x7f", K.Key_Tab: b"\t",
           K.Key_Backtab: b"\x1b[Z", K.Key_Escape: b"\x1b"}


def _modifier_code(mods) -> int:
    """xterm's modifier parameter: 1 + shift(1) + alt(2) + ctrl(4); 1 means none."""
    code = 1
    if mods & Qt.KeyboardModifier.ShiftModifier:
        code += 1
    if mods & Qt.KeyboardModifier.AltModifier:
        code += 2
    if mods & Qt.KeyboardModifier.ControlModifier:
        code += 4
    return code


def key_bytes(event: QKeyEvent, app_cursor_keys: bool = False) -> bytes:
    """The bytes for ``event``; empty when the key sends nothing (a lone modifier)."""
    key = event.key()
    mods = event.modifiers()
    ctrl = bool(mods & Qt.KeyboardModifier.ControlModifier)
    alt = bool(mods & Qt.KeyboardModifier.AltModifier)
    code = _modifier_code(mods)
    if key in _CURSOR:
        if code > 1:
            return f"\x1b[1;{code}{_CURSOR[key]}".encode()
        return (b"\x1bO" if app_cursor_keys else b"\x1b[") + _CURSOR[key].encode()
    if key in _TILDE:
        return f"\x1b[{_TILDE[key]}{';' + str(code) if code > 1 else ''}~".encode()
    if key in _SS3:
        return f"\x1bO{_SS3[key]}".encode() if code == 1 else f"\x1b[1;{code}{_SS3[key]}".encode()
    if key in _SIMPLE:
        data = _SIMPLE[key]
        if key == K.Key_Backspace and ctrl:
            data = b"\x08"
        return b"\x1b" + data if alt else data
    if ctrl and K.Key_A <= key <= K.Key_Z:
        data = bytes([key - K.Key_A + 1])
    elif ctrl and key in (K.Key_Space, K.Key_At, K.Key_2):
        data = b"\x00"
    elif ctrl and key == K.Key_BracketLeft:
        data = b"\x1b"
    elif ctrl and key == K.Key_Backslash:
        data = b"\x1c"
    elif ctrl and key == K.Key_BracketRight:
        data = b"\x1d"
    elif ctrl and key in (K.Key_AsciiCircum, K.Key_6):
        data = b"\x1e"
    elif ctrl and key in (K.Key_Underscore, K.Key_Minus):
        data = b"\x1f"
    else:
        data = event.text().encode("utf-8")
    if alt and data:
        return b"\x1b" + data
    return data
