"""Rich text made plain, for the places that draw text as it is (the status bar, window titles).

Panels write their reports as Qt rich text (``<b>``, ``<code>``, ``&lt;``); the status bar draws a
message verbatim, so without this a user reads the tags.
"""

from __future__ import annotations

import re

_MARKUP = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(\s[^<>]*)?/?>|&(#\d+|#x[0-9A-Fa-f]+|[A-Za-z]+);")


def plain_line(text: str) -> str:
    """``text`` as one line of plain text: tags dropped, entities decoded, line breaks as spaces.

    Text with no markup is kept as it is (a ``<`` in ``a < b`` is not a tag)."""
    if _MARKUP.search(text):
        from PySide6.QtGui import QTextDocumentFragment

        text = re.sub(r"<br\s*/?>|</(div|p|li)>", "\n", text, flags=re.IGNORECASE)
        text = QTextDocumentFragment.fromHtml(text).toPlainText()
    return " ".join(part.strip() for part in text.splitlines() if part.strip())
