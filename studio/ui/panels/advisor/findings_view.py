"""The findings tree (grouped by severity, with gain and a tick for automatic fixes) and the
detail view of the selected finding."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem

from studio.tools.advisor.model import SEVERITIES

SEVERITY_COLOURS = {"high": "#b5495b", "medium": "#c98a0c", "low": "#4f9d72"}
FINDING_ROLE = Qt.ItemDataRole.UserRole + 1


class FindingsTree(QTreeWidget):
    """Severity groups, one row per finding: title, gain, source, fix. Fix rows are checkable
    (fixes that change the numbers start unticked).

    Signals:
        finding_selected(object): the Finding of the clicked row.
    """

    finding_selected = Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setColumnCount(4)
        self.setHeaderLabels(["Finding", "Gain", "Source", "Automatic fix"])
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        header = self.header()
        header.setStretchLastSection(False)  # the titles take the room, not the fix column
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(60)
        for column in (1, 2, 3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.currentItemChanged.connect(self._on_current)

    def show_findings(self, findings) -> None:
        self.clear()
        for severity in SEVERITIES:
            group = [f for f in findings if f.severity == severity]
            if not group:
                continue
            top = QTreeWidgetItem(self, [f"{severity.capitalize()} ({len(group)})"])
            top.setForeground(0, QBrush(QColor(SEVERITY_COLOURS[severity])))
            font = top.font(0)
            font.setBold(True)
            top.setFont(0, font)
            for f in group:
                gain = f.gain_text() if f.gain_ms is not None else ""
                fix = (f"{f.fix} (changes accuracy)" if f.changes_accuracy else f.fix) if f.fix else ""
                item = QTreeWidgetItem(top, [f.title, gain, f.source, fix])
                item.setData(0, FINDING_ROLE, f)
                item.setToolTip(0, f"{f.title}\n{f.id}\n\n" + "\n".join(f.evidence))
                if f.fix:
                    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                    item.setCheckState(3, Qt.CheckState.Unchecked if f.changes_accuracy else Qt.CheckState.Checked)
                    item.setToolTip(3, "Ticked fixes are applied by Apply fixes"
                                    + ("; this one changes the model's numbers (the loop checks the cosine)"
                                       if f.changes_accuracy else "; exact: the numbers do not change"))
            top.setExpanded(True)
            top.setFirstColumnSpanned(True)

    def ticked(self) -> list:
        """The findings whose fix is ticked."""
        out = []
        for i in range(self.topLevelItemCount()):
            top = self.topLevelItem(i)
            for j in range(top.childCount()):
                item = top.child(j)
                finding = item.data(0, FINDING_ROLE)
                if finding is not None and finding.fix and item.checkState(3) == Qt.CheckState.Checked:
                    out.append(finding)
        return out

    def _on_current(self, current, _previous) -> None:
        finding = current.data(0, FINDING_ROLE) if current is not None else None
        if finding is not None:
            self.finding_selected.emit(finding)


def finding_html(f) -> str:
    """Rich text of one finding for the detail view."""
    colour = SEVERITY_COLOURS.get(f.severity, "#555")
    parts = [f"<h3 style='color:{colour}'>{escape(f.title)}</h3>",
             f"<p><code>{escape(f.id)}</code> · {escape(f.source)} · {f.severity}"
             + (f" · <b>{escape(f.gain_text())}</b> per step" if f.gain_ms is not None or f.gain_basis else "")
             + (" · <b>changes accuracy</b>" if f.changes_accuracy else "") + "</p><ul>"]
    parts += [f"<li>{escape(e)}</li>" for e in f.evidence]
    parts.append(f"</ul><p><b>Recommendation:</b> {escape(f.recommendation)}</p>")
    if f.nodes:
        parts.append("<p><b>Nodes</b> (click the finding to select them in the graph): "
                     + ", ".join(f"<code>{escape(n)}</code>" for n in f.nodes[:40])
                     + (f" … ({len(f.nodes)} in all)" if len(f.nodes) > 40 else "") + "</p>")
    if f.time_ranges:
        parts.append("<p><b>Time ranges</b> (shown in the profiler's timeline): "
                     + ", ".join(f"{a / 1e6:,.3f} – {b / 1e6:,.3f} ms" for a, b in f.time_ranges) + "</p>")
    for sheet, table in (f.details or {}).items():
        parts.append(f"<p><b>{escape(sheet)}</b></p><table border='1' cellspacing='0' cellpadding='3'><tr>"
                     + "".join(f"<th>{escape(str(c))}</th>" for c in table["columns"]) + "</tr>")
        for row in table["rows"][:30]:
            parts.append("<tr>" + "".join(f"<td>{escape(str(c)[:400]).replace(chr(10), '<br>')}</td>" for c in row)
                         + "</tr>")
        parts.append("</table>")
    for link in f.links:
        parts.append(f"<p><a href='file://{escape(link)}'>{escape(link)}</a></p>")
    return "".join(parts)
