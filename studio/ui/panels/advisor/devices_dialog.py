"""Edit the roofline's device table: peaks, bandwidth, where each figure comes from, estimates.

Rows come from :func:`studio.tools.advisor.devices.load_devices` (built-in plus the user's file);
Save writes every row that differs from the built-in table to the user's file. "Measure this
computer" runs the micro-benchmark (ONNX Runtime MatMul / Conv and a bandwidth curve over working
sets, best of several rounds) as a job, caches it (:mod:`studio.tools.advisor.roof_cache`) and
shows its row; the curve and notes, not shown as cells, travel with the row.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from studio.tools.advisor.devices import BUILTIN, THIS_COMPUTER, Device, devices_file, load_devices, save_device
from studio.tools.advisor.roof_cache import cache_file, load_cached

COLUMNS = ("Device", "FP16 TFLOPS", "INT8 TOPS", "FP32 TFLOPS", "Bandwidth GB/s", "Estimate", "Source")


def _num(value: float | None, scale: float) -> str:
    return "" if value is None else f"{value / scale:g}"


class DevicesDialog(QDialog):
    """The device table, editable cell by cell."""

    def __init__(self, runner, parent=None):
        super().__init__(parent)
        self.runner = runner
        self.setWindowTitle("Roofline devices")
        self.resize(980, 320)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.horizontalHeader().setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        self._extras: dict[str, Device] = {}  # by name: the fields no cell shows (bandwidth curve, note)
        for device in load_devices().values():
            self._add_row(device)
        cached = load_cached()
        if cached is not None:  # this computer lives in the roof cache (date, machine), not the table
            self._add_row(cached[0])
        self.measure_button = QPushButton("Measure this computer", self)
        self.measure_button.setToolTip("Measure again: ONNX Runtime MatMul and Conv, and Relu over working sets "
                                       "from 128 KiB to 128 MiB, timed by its profiler, best of several rounds "
                                       "(about ten seconds)")
        self.measure_button.clicked.connect(self.measure)
        self.add_button = QPushButton("Add row", self)
        self.add_button.clicked.connect(lambda: self._add_row(Device("new device", 1e12, 1e11, source="")))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        note = QLabel(f"Edits are kept in {devices_file()}. Mark figures you derived or assumed as estimates. "
                      f"This computer's measured roofs (best of several rounds, with the date and this machine's "
                      f"CPU) are kept in {cache_file()}.", self)
        note.setWordWrap(True)
        bar = QHBoxLayout()
        bar.addWidget(self.measure_button)
        bar.addWidget(self.add_button)
        bar.addStretch(1)
        bar.addWidget(buttons)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(note)
        layout.addLayout(bar)

    def _add_row(self, d: Device) -> None:
        self._extras[d.name] = d
        row = self.table.rowCount()
        self.table.insertRow(row)
        cells = (d.name, _num(d.fp16_flops, 1e12), _num(d.int8_ops, 1e12), _num(d.fp32_flops, 1e12),
                 _num(d.bandwidth, 1e9), "", d.source)
        for column, text in enumerate(cells):
            item = QTableWidgetItem(text)
            if column == 5:
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked if d.estimate else Qt.CheckState.Unchecked)
            item.setToolTip(d.note or d.source)
            self.table.setItem(row, column, item)

    def devices(self) -> list[Device]:
        """The rows as devices (raises ValueError naming the bad cell)."""
        out = []
        for row in range(self.table.rowCount()):
            text = [self.table.item(row, c).text().strip() if self.table.item(row, c) else "" for c in range(len(COLUMNS))]

            def number(column: int, scale: float, required: bool = False) -> float | None:
                if not text[column]:
                    if required:
                        raise ValueError(f"row {row + 1} ({text[0]}): {COLUMNS[column]} is required")
                    return None
                try:
                    return float(text[column]) * scale
                except ValueError as exc:
                    raise ValueError(f"row {row + 1} ({text[0]}): {COLUMNS[column]} is not a number") from exc

            device = Device(text[0], number(1, 1e12, True), number(4, 1e9, True), number(2, 1e12),
                            number(3, 1e12), text[6], self.table.item(row, 5).checkState() == Qt.CheckState.Checked)
            before = self._extras.get(device.name)
            if before is not None:
                device.note = before.note
                if _num(before.bandwidth, 1e9) == text[4]:  # an edited bandwidth replaces the measured curve
                    device.bandwidths = before.bandwidths
            out.append(device)
        return out

    def save(self) -> None:
        builtin = {d.name: d for d in BUILTIN}
        try:
            devices = self.devices()
        except ValueError as exc:
            QMessageBox.warning(self, "Roofline devices", str(exc))
            return
        for device in devices:
            if device.name != THIS_COMPUTER and builtin.get(device.name) != device:  # measured: in the cache
                save_device(device)
        self.accept()

    def measure(self) -> None:
        from studio.tools.advisor.roof_cache import this_computer_roofs

        def job(cancel):
            device, _origin = yield from this_computer_roofs(remeasure=True, cancel=cancel)
            return device

        self.measure_button.setEnabled(False)
        handle = self.runner.start("Measuring this computer", job, key="advisor-measure")
        handle.finished.connect(self._on_measured)
        handle.failed.connect(lambda exc, _tb: self.measure_button.setEnabled(True))

    def _on_measured(self, device: Device) -> None:
        self.measure_button.setEnabled(True)
        for row in range(self.table.rowCount()):
            if self.table.item(row, 0).text() == device.name:
                self.table.removeRow(row)
                break
        self._add_row(device)
