"""A one-line label that gives way in a crowded row without cutting words or numbers.

``fit_text`` drops whole parts (" · "-separated facts, then words) from the end, or from the
start for a breadcrumb, and marks the cut with "…"; a number is never cut in two. The label
shows the full text as its tooltip whenever something was left out, so it is one hover away.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QSizePolicy, QStyledItemDelegate, QWidget

ELLIPSIS = "…"


def fit_text(text: str, metrics: QFontMetrics, width: int, separator: str = " · ", keep_end: bool = False) -> str:
    """``text`` as it fits ``width`` px: whole parts left out and "…" in their place.

    Parts are split at ``separator`` first, then at spaces, then at commas (a shape keeps its
    first whole dims: "float32[1,3,…"); ``keep_end`` keeps the last parts
    (a path or breadcrumb) instead of the first; a path or scoped name (``/`` and no space) keeps its
    last parts ("…/models/unet.onnx"). A single word too wide for ``width`` is cut in
    its middle only when it holds no digit (a number is shown whole or not at all).
    """
    if metrics.horizontalAdvance(text) <= width:
        return text
    if " " not in text and "/" in text.strip("/"):  # a path or a scoped name: its end says what it is
        separator, keep_end = "/", True
    # commas split only lists and shapes ("[1,3,256,256]"), never a "7,018"
    separators = (separator, " ", ",") if "[" in text or "(" in text else (separator, " ")
    for sep in separators:
        parts = text.split(sep)
        if len(parts) < 2:
            continue
        for keep in range(len(parts) - 1, 0, -1):
            kept = parts[-keep:] if keep_end else parts[:keep]
            if sep == " " and not keep_end and _bare_number(kept[-1]):
                continue  # "393 …" says less than "…": a number keeps the word after it
            candidate = ELLIPSIS + sep + sep.join(kept) if keep_end else sep.join(kept) + sep + ELLIPSIS
            if metrics.horizontalAdvance(candidate) <= width:
                return candidate
        text = parts[-1] if keep_end else parts[0]  # not even one part fits with the mark: try inside it
        marked = f"{ELLIPSIS} {text}" if keep_end else f"{text} {ELLIPSIS}"
        for candidate in (marked, text):
            if metrics.horizontalAdvance(candidate) <= width:
                return candidate
    if any(ch.isdigit() for ch in text):
        return ELLIPSIS  # never a cut number: the whole text is in the tooltip
    mode = Qt.TextElideMode.ElideLeft if keep_end else Qt.TextElideMode.ElideMiddle
    return metrics.elidedText(text, mode, width)


def _bare_number(word: str) -> bool:
    return any(ch.isdigit() for ch in word) and not any(ch.isalpha() for ch in word)


class ElidedLabel(QLabel):
    """A plain-text label that fits its width with :func:`fit_text`; ``text()`` stays the full text.

    The tooltip shows the full text whenever the label shows less than all of it, before any
    tooltip set with ``setToolTip``.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None, separator: str = " · ",
                 keep_end: bool = False, min_chars: int = 8):
        super().__init__(parent)
        self._full = ""
        self._hint = ""
        self._separator = separator
        self._keep_end = keep_end
        self._min_chars = min_chars
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # Qt override: remember the full text, show what fits
        self._full = text or ""
        self.updateGeometry()
        self._refit()

    def text(self) -> str:  # Qt override: the full text, whatever is shown
        return self._full

    def shown_text(self) -> str:
        """The text on screen (the full text or a shortened one)."""
        return super().text()

    def setToolTip(self, hint: str) -> None:  # Qt override: a tooltip of its own, kept with the full text
        self._hint = hint or ""
        self._refit()

    def sizeHint(self) -> QSize:  # Qt override: room for the full text
        hint = super().sizeHint()
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(self._full) + margins.left() + margins.right() + 2
        return QSize(width, hint.height())

    def minimumSizeHint(self) -> QSize:  # Qt override: a few characters, so the row can give way
        hint = super().minimumSizeHint()
        return QSize(self.fontMetrics().averageCharWidth() * self._min_chars, hint.height())

    def resizeEvent(self, event) -> None:  # Qt override
        super().resizeEvent(event)
        self._refit()

    def _refit(self) -> None:
        width = self.contentsRect().width()
        shown = fit_text(self._full, self.fontMetrics(), width, self._separator, self._keep_end)
        super().setText(shown)
        lines = [self._full] if shown != self._full else []
        if self._hint and self._full not in self._hint:
            lines.append(self._hint)
        elif self._hint:
            lines = [self._hint]  # the hint already holds the full text
        super().setToolTip("\n".join(lines))


class FitTextDelegate(QStyledItemDelegate):
    """Draws a view's cells shortened with :func:`fit_text` (whole words and numbers, "…" for the
    rest) instead of Qt's elision, which cuts anywhere, numbers included. Give the cells tooltips."""

    PADDING = 8  # px the style keeps around a cell's text

    def initStyleOption(self, option, index) -> None:  # Qt override
        super().initStyleOption(option, index)
        room = option.rect.width() - self.PADDING
        if option.text and room > 0:
            if not option.icon.isNull():
                room -= option.decorationSize.width() + 4
            option.text = fit_text(option.text, option.fontMetrics, room)
