"""The findings (slow ranks, stage imbalances, slow links) with their evidence, and the layout
(pipeline stages, parallel groups), as wrapped text; a finding's rank is a link that selects it."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QUrl, Signal
from PySide6.QtWidgets import QTextBrowser

COLOURS = {"slow rank": "#b5495b", "stage imbalance": "#c98a0c", "slow link": "#7a4fb0"}


class FindingsView(QTextBrowser):
    """Signals: rank_clicked(int) — the rank link of a finding was clicked."""

    rank_clicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._on_anchor)

    def show_findings(self, findings: list[dict]) -> None:
        parts = []
        if not findings:
            parts.append("<p>No slow rank and no slow link: every spread is within 5 %.</p>")
        for f in findings:
            title = escape(f["title"])
            if f.get("rank") is not None:
                title = title.replace(f"rank {f['rank']}", f"<a href='rank:{f['rank']}'>rank {f['rank']}</a>", 1)
            colour = COLOURS.get(f["kind"], "#555")
            parts.append(f"<p style='margin:4px 0'><b style='color:{colour}'>{title}</b><br>"
                         f"{escape(f['evidence'])}</p>")
        self.setHtml("".join(parts))

    def _on_anchor(self, url: QUrl) -> None:
        text = url.toString()
        if text.startswith("rank:"):
            self.rank_clicked.emit(int(text.split(":", 1)[1]))


def layout_html(lines: list[tuple[str, str]]) -> str:
    """The stages and groups as a two-column table (title, ranks)."""
    if not [k for k, _ in lines if k != "from"]:
        return "<p>No pipeline stages and no parallel groups recorded (no profiler_metadata.json).</p>"
    rows = "".join(f"<tr><td valign='top'><b>{escape(k)}</b></td><td>{escape(v)}</td></tr>" for k, v in lines)
    return f"<table cellspacing='3'>{rows}</table>"
