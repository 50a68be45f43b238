"""The blocks allocated or freed in the interval selected on the memory curve: one row per block, or
added up per op, stream or component, blocks under a size left out.

The query is the memory engine's own (:func:`studio.tools.profiler.memory.interval.interval_ops`,
what ``studio profile memory DIR --from MS --to MS --group G --min-kb N`` prints), run on the
device's block columns the memory job brought back: one numpy pass, quick enough for the GUI thread.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QWidget

from studio.tools.profiler.memory.interval import interval_ops
from studio.ui.panels.cluster.widgets.parts import column
from studio.ui.panels.cluster.widgets.tables import fill, small_table

BLOCK_HEADERS = ["Block (operator)", "Size (MB)", "In the interval", "Component", "Stream", "Allocated (ms)",
                 "Released (ms)"]
GROUP_HEADERS = ["{}", "Blocks", "Allocations", "Allocated (MB)", "Frees", "Freed (MB)", "Net (MB)"]
GROUPS = (("each block", None), ("op", "op"), ("stream", "stream"), ("component (PTA / GE)", "component"))


def block_rows(result: dict, origin_us: float) -> list[list]:
    """The table rows of an ``interval_ops`` result, times in ms from ``origin_us``."""
    rows = []
    for op in result["ops"]:
        what = "allocated and freed" if op["allocated_in"] and op["freed_in"] else \
            "allocated" if op["allocated_in"] else "freed"
        released = op["release_ts_us"]
        rows.append([op["name"], op["size_mb"], what, op["component"], op["stream"] or "-",
                     (op["alloc_ts_us"] - origin_us) / 1000,
                     "not released" if released is None else (released - origin_us) / 1000])
    return rows


def group_rows(result: dict) -> list[list]:
    return [[str(g["key"]) or "(none: GE's own blocks)", g["blocks"], g["allocations"], g["allocated_mb"],
             g["frees"], g["freed_mb"], g["net_mb"]] for g in result["groups"]]


class MemoryInterval(QWidget):
    """``show_interval(device, start_ms, end_ms)``: the table of the device's blocks in the interval."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.device: dict | None = None
        self.span: tuple[float, float] | None = None
        self.result: dict | None = None
        self.group = QComboBox(self)
        for title, key in GROUPS:
            self.group.addItem(title, key)
        self.group.setToolTip("List each block, or add them up per op, per stream or per component")
        self.min_kb = QDoubleSpinBox(self)
        self.min_kb.setRange(0, 1e9)
        self.min_kb.setDecimals(0)
        self.min_kb.setSuffix(" KB")
        self.min_kb.setToolTip("Leave out blocks smaller than this")
        self.group.currentIndexChanged.connect(lambda _i: self.refresh())
        self.min_kb.valueChanged.connect(lambda _v: self.refresh())
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = small_table(BLOCK_HEADERS, self)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Show", self))
        bar.addWidget(self.group)
        bar.addWidget(QLabel("blocks of at least", self))
        bar.addWidget(self.min_kb)
        bar.addWidget(self.summary, 1)
        column(self, (0, 4, 0, 0), bar, self.table)

    def show_interval(self, device: dict, start_ms: float, end_ms: float) -> None:
        self.device, self.span = device, (start_ms, end_ms)
        self.refresh()

    def clear(self, message: str) -> None:
        """No interval: ``message`` says why."""
        self.device, self.span, self.result = None, None, None
        self.summary.setText(message)
        fill(self.table, [], BLOCK_HEADERS)

    def origin_us(self) -> float:
        """The device's time origin: its first allocator sample (as the chart's axis)."""
        series = (self.device or {}).get("series") or {}
        return (series.get("ts_us") or [self.device.get("first_sample_ts_us") or 0.0])[0]

    def refresh(self) -> None:
        columns = (self.device or {}).get("blocks")
        if self.span is None or not columns or not columns["name"]:
            self.result = None
            self.summary.setText("No operator blocks recorded (no operator_memory.csv / OP_MEMORY): profile with "
                                 "profile_memory=True and record_shapes to list what allocated.")
            fill(self.table, [], BLOCK_HEADERS)
            return
        origin, (start, end) = self.origin_us(), self.span
        group = self.group.currentData()
        self.result = interval_ops(columns, origin + start * 1000, origin + end * 1000, self.min_kb.value(), group)
        r = self.result
        self.summary.setText(f"{start:,.3f}–{end:,.3f} ms: {r['allocations']} allocation(s) "
                             f"{r['allocated_mb']:,.3f} MB, {r['frees']} free(s) {r['freed_mb']:,.3f} MB, "
                             f"net {r['net_mb']:+,.3f} MB")
        if group is None:
            fill(self.table, block_rows(r, origin), BLOCK_HEADERS)
        else:
            headers = [GROUP_HEADERS[0].format(self.group.currentText().split(" ")[0].capitalize())] + GROUP_HEADERS[1:]
            fill(self.table, group_rows(r), headers)
