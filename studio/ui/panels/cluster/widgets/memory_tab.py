"""The memory tab: pick a device, see its curve with the peak (beside the process's and the whole
device's memory), the blocks allocated or freed in an interval dragged on the curve, the blocks alive
at the peak and the module peaks (static graphs: the peak node and its blocks)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QTabWidget, QWidget

from studio.ui.panels.cluster.state import device_label, device_summary
from studio.ui.panels.cluster.widgets.parts import column, titled
from studio.ui.panels.cluster.widgets.tables import fill, small_table


class MemoryTab(QWidget):
    """Devices of the memory report (``show_report``), one at a time."""

    BLOCK_HEADERS = ["Block (operator)", "Size (MB)", "Allocated (ms)", "Released (ms)"]
    NODE_HEADERS = ["Block (operator)", "Size (MB)", "From node", "To node"]

    def __init__(self, parent=None):
        super().__init__(parent)
        from studio.ui.panels.cluster.widgets.memory_chart import MemoryChart
        from studio.ui.panels.cluster.widgets.memory_interval import MemoryInterval

        self.devices: list[dict] = []
        self.device_combo = QComboBox(self)
        self.device_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.device_combo.currentIndexChanged.connect(self._on_device)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.chart = MemoryChart(self)
        self.interval = MemoryInterval(self)
        self.chart.interval_changed.connect(self._on_interval)
        self.blocks = small_table(self.BLOCK_HEADERS, self)
        self.modules = small_table(["Module", "Peak reserved (MB)"], self)
        self.blocks_title = QLabel("Blocks alive at the peak (largest ten)", self)
        self.blocks_title.setStyleSheet("font-weight: bold;")
        top = QHBoxLayout()
        top.addWidget(QLabel("Device", self))
        top.addWidget(self.device_combo)
        top.addWidget(self.summary, 1)
        peak = QSplitter(Qt.Orientation.Horizontal, self)
        peak.addWidget(titled(self.blocks_title, self.blocks, peak))
        peak.addWidget(titled("Module peaks (npu_module_mem)", self.modules, peak))
        peak.setStretchFactor(0, 3)
        peak.setStretchFactor(1, 2)
        self.lower = lower = QTabWidget(self)
        lower.addTab(self.interval, "In the selected interval")
        lower.addTab(peak, "At the peak")
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.chart)
        split.addWidget(lower)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([360, 240])
        column(self, 4, top, split)

    def show_report(self, memory: dict) -> None:
        self.devices = list(memory.get("devices", []))
        self.device_combo.blockSignals(True)
        self.device_combo.clear()
        self.device_combo.addItems([device_label(d) for d in self.devices])
        self.device_combo.blockSignals(False)
        self.show_device(0)

    def show_device(self, index: int) -> None:
        if not 0 <= index < len(self.devices):
            return
        if self.device_combo.currentIndex() != index:
            self.device_combo.setCurrentIndex(index)  # calls back here
            return
        device = self.devices[index]
        self.summary.setText(device_summary(device))
        self.summary.setToolTip("" if device.get("peak_ts_us") is None else
                                f"peak at {device['peak_ts_us']:,.3f} µs (the profile's clock); files: "
                                + ", ".join(device.get("files", [])))
        self.chart.show_device(device)  # a curve selects its first interval: the table follows
        if self.chart.interval() is None:
            self.interval.clear("No allocator curve for this device: no interval to select. The blocks at the "
                                "peak are under \"At the peak\".")
        self.lower.setCurrentIndex(0 if self.chart.interval() is not None else 1)
        ops = device.get("top_ops_at_peak", [])
        if device.get("peak_node_index") is not None:
            fill(self.blocks, [[o["name"], o["size_mb"], o.get("alloc_node"),
                                "end" if o.get("release_node") is None else o["release_node"]] for o in ops],
                 self.NODE_HEADERS)
        else:
            ts = (device.get("series") or {}).get("ts_us") or [device.get("peak_ts_us") or 0.0]
            fill(self.blocks, [[o["name"], o["size_mb"], (o["alloc_ts_us"] - ts[0]) / 1000,
                                "not released" if o["release_ts_us"] is None else (o["release_ts_us"] - ts[0]) / 1000]
                               for o in ops], self.BLOCK_HEADERS)
        alive = device.get("alive_blocks_at_peak")
        self.blocks_title.setText("Blocks alive at the peak" + (
            f" (largest {len(ops)} of {alive})" if alive and alive > len(ops) else
            "" if ops else ": none recorded (no operator_memory.csv / OP_MEMORY)"))
        fill(self.modules, [[m["component"], m["peak_reserved_mb"]] for m in device.get("modules", [])])

    def _on_device(self, index: int) -> None:
        self.show_device(index)

    def _on_interval(self, start_ms: float, end_ms: float) -> None:
        device = self.devices[self.device_combo.currentIndex()] if self.devices else None
        if device is not None:
            self.interval.show_interval(device, start_ms, end_ms)

