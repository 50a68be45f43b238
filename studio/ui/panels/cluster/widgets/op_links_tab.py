"""The Links by op tab: the communication matrix split by op type (each op type's total per link,
or every aggregate with the top/middle/bottom samples and the op each one is), with each link's
share of its transport's reference bandwidth; links below the reference, and links slower than
the others of their op type, are listed above the table and tinted in it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QCheckBox, QTextBrowser, QWidget

from studio.ui.panels.cluster.widgets.tables import RowsModel, fill, small_table
from studio.ui.panels.cluster.widgets.parts import controls_row, tab_body
from studio.ui.panels.cluster.widgets.when_shown import WhenShown

HEADERS = ["Op type", "Aggregate", "Step", "Group", "Link", "Transport", "MB", "ms", "GB/s", "Of reference", "Op"]
SLOW = QColor(255, 214, 204)
SHARE = HEADERS.index("Of reference")
BACKGROUND = int(Qt.ItemDataRole.BackgroundRole)


def link_rows(report: dict, step, every_step: bool, totals_only: bool) -> list[list]:
    """The op-type links of the chosen step, between two ranks (LOCAL copies left out)."""
    rows = []
    for r in report.get("op_links", []):
        if r["src"] == r["dst"] or (totals_only and r["aggregate"] != "total"):
            continue
        if not every_step and r["step"] != step:
            continue
        share = "" if r["of_reference"] is None else f"{r['of_reference']:.0%} of {r['reference_gbps']:g}"
        rows.append([r["op_type"], r["aggregate"], "" if r["step"] is None else r["step"], r["group"],
                     f"{r['src']}->{r['dst']}", r["transport"], r["size_mb"], r["time_ms"], r["bandwidth_gbps"], share,
                     r["op_name"]])
    return rows


def findings_text(report: dict) -> str:
    """The links judged slow: below their transport's reference, or slower than their op type's others."""
    found = [f for f in report.get("slow_links", []) if f.get("kind") in ("reference", "op link")]
    if not found:
        return ("No link between ranks runs below its transport's reference (RDMA 12.5, HCCS 18, PCIe 20 GB/s) or "
                "over 5 % slower than the others of its op type (links of 1 MB or more).")
    return "\n".join(f"{f.get('verdict', 'slow link')}: {f['evidence']}" for f in found)


class _TintedModel(RowsModel):
    """Rows under their reference bandwidth tinted."""

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        if int(role) == BACKGROUND:
            share = self.rows[index.row()][SHARE]
            if share and int(share.split("%")[0]) < 100:
                return SLOW
            return None
        return super().data(index, role)


class OpLinksTab(QWidget):
    """Shows the cluster report's ``op_links`` for the step the panel chose."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.report: dict = {}
        self.step, self.every_step = None, True
        self.totals_only = QCheckBox("Totals only (untick for the top/middle/bottom samples)", self)
        self.totals_only.setChecked(True)
        self.totals_only.toggled.connect(lambda _on: self.refresh())
        self.findings = QTextBrowser(self)
        self.table = small_table(HEADERS, self, stretch=-1, model=_TintedModel)  # the sampled op's name stretches
        top = controls_row(self, [self.totals_only], "Of reference: the link's bandwidth / its transport's nominal "
                                                     "one (RDMA 12.5, HCCS 18, PCIe 20 GB/s); tinted below 100 %.")
        tab_body(self, top, self.findings, self.table, (70, 530))
        # filled when on screen, not behind another tab: the table, then the findings' text
        self.view = WhenShown(self, self.refresh, lambda: self.findings.setPlainText(findings_text(self.report)))

    def show_report(self, report: dict | None, step, every_step: bool) -> None:
        """The cluster report and the panel's step (``every_step``: all of them)."""
        self.report, self.step, self.every_step = report or {}, step, every_step
        self.view.request()

    def refresh(self) -> None:
        fill(self.table, link_rows(self.report, self.step, self.every_step, self.totals_only.isChecked()))
