"""Text from elsewhere (a host's tools, its error messages) made safe to print on a terminal.

A remote program's output may hold escape sequences: printed as they are, they retitle the
terminal window, clear it, move the cursor over earlier lines or switch its character set.
:func:`printable` removes them whole (CSI, OSC, DCS/APC/PM/SOS strings, two-byte ESC sequences)
and then every remaining control character except newline and tab.
"""

from __future__ import annotations

import re

_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"                      # CSI: colours, cursor moves, clear screen
    r"|\x1b[\]P^_X][^\x07\x1b]*(?:\x07|\x1b\\)?"     # OSC (window title), DCS, PM, APC, SOS strings
    r"|\x9b[0-?]*[ -/]*[@-~]"                       # the 8-bit CSI
    r"|\x1b[ -/]*[0-~]"                             # two-byte sequences (charset switches, RIS)
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all C0/C1 but \t and \n; DEL


def printable(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (newline and tab kept)."""
    if not text or text.isprintable():
        return text
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))
