"""Wizard page 2: AIPP settings with a live before/after preview computed off the GUI thread."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout,
                               QLabel, QPushButton, QScrollArea, QSplitter, QVBoxLayout, QWidget)

from studio.tools.convert.aipp import FORMAT_CHANNELS, JPEG_YUV2RGB, AippOp
from studio.ui.jobs import JobRunner
from studio.ui.panels.convert.image_view import ImageView, float_box, int_box

PREVIEW_DELAY_MS = 150  # coalesce bursts of edits (spin boxes) into one preview job
NARROW_WIDTH = 820  # below this the preview sits under the form


class AippPage(QWidget):
    """Every static AIPP field of ATC's template, and the preview.

    Signals:
        changed(): a setting changed.
        load_requested(Path): the user picked an AIPP file to load (the panel parses it as a job).
    """

    changed = Signal()
    load_requested = Signal(object)

    def __init__(self, runner: JobRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.runner = runner
        self.model_hw: tuple[int, int] | None = None
        self.source_path: Path | None = None  # the file loaded, while the form still matches it
        self._loaded_text: str | None = None
        self.preview_image: Path | None = None
        self._preview_job = None
        self.last_preview = None

        self.enabled_box = QCheckBox("Insert AIPP pre-processing (the model takes the raw uint8 image)", self)
        load = QPushButton("Load AIPP config…", self)
        load.clicked.connect(self._on_load_clicked)
        top = QHBoxLayout()
        top.addWidget(self.enabled_box, 1)
        top.addWidget(load)

        self.format_combo = QComboBox()
        self.format_combo.addItems(list(FORMAT_CHANNELS))
        self.src_w, self.src_h = int_box(0, 4096), int_box(0, 4096)
        self.src_w.setSpecialValueText("model"), self.src_h.setSpecialValueText("model")
        self.rbuv_swap = QCheckBox("R/B (U/V) swap")
        self.ax_swap = QCheckBox("A/X swap")
        self.csc_switch = QCheckBox("Colour space conversion (CSC)")
        self.csc_switch.setToolTip("YUV → RGB with the matrix of the loaded file (JPEG full range by default)")
        image_box = QGroupBox("Input image")
        image_form = QFormLayout(image_box)
        image_form.addRow("Format", self.format_combo)
        size_row = QHBoxLayout()
        size_row.addWidget(QLabel("W"))
        size_row.addWidget(self.src_w)
        size_row.addWidget(QLabel("H"))
        size_row.addWidget(self.src_h)
        image_form.addRow("Source size", size_row)
        swaps = QHBoxLayout()
        swaps.addWidget(self.rbuv_swap)
        swaps.addWidget(self.ax_swap)
        image_form.addRow("Channels", swaps)
        image_form.addRow(self.csc_switch)

        self.crop_box = QGroupBox("Crop")
        self.crop_box.setCheckable(True)
        self.crop_box.setChecked(False)
        self.crop_x, self.crop_y = int_box(0, 4096), int_box(0, 4096)
        self.crop_w, self.crop_h = int_box(0, 4096), int_box(0, 4096)
        crop_grid = QGridLayout(self.crop_box)
        for col, (label, box) in enumerate((("start W", self.crop_x), ("start H", self.crop_y),
                                            ("size W", self.crop_w), ("size H", self.crop_h))):
            crop_grid.addWidget(QLabel(label), 0, col)
            crop_grid.addWidget(box, 1, col)

        norm_box = QGroupBox("Normalisation: (x − mean − min) × var_reci")
        norm_grid = QGridLayout(norm_box)
        self.mean = [int_box(-255, 255) for _ in range(3)]
        self.min = [float_box(0.0, 3) for _ in range(3)]
        self.var = [float_box(1.0, 8) for _ in range(3)]
        for col, label in enumerate(("", "mean", "min", "var_reci")):
            norm_grid.addWidget(QLabel(label), 0, col)
        for row in range(3):
            norm_grid.addWidget(QLabel(f"ch {row}"), row + 1, 0)
            norm_grid.addWidget(self.mean[row], row + 1, 1)
            norm_grid.addWidget(self.min[row], row + 1, 2)
            norm_grid.addWidget(self.var[row], row + 1, 3)

        self.pad_box = QGroupBox("Padding")
        self.pad_box.setCheckable(True)
        self.pad_box.setChecked(False)
        self.pads = [int_box(0, 32) for _ in range(4)]
        self.pad_value = float_box(0.0, 3)
        pad_grid = QGridLayout(self.pad_box)
        for col, label in enumerate(("left", "right", "top", "bottom", "value")):
            pad_grid.addWidget(QLabel(label), 0, col)
        for col, box in enumerate([*self.pads, self.pad_value]):
            pad_grid.addWidget(box, 1, col)

        form_widget = QWidget()
        form_layout = QVBoxLayout(form_widget)
        form_layout.setContentsMargins(0, 0, 4, 0)
        for box in (image_box, self.crop_box, norm_box, self.pad_box):
            form_layout.addWidget(box)
        form_layout.addStretch(1)
        scroll = self._scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(form_widget)
        # Wide enough for the form: a sideways scroll bar would hide half of every row.
        scroll.setMinimumWidth(form_widget.sizeHint().width() + scroll.verticalScrollBar().sizeHint().width() + 4)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        self.before_view = ImageView("Before: raw image as the NPU receives it")
        self.after_view = ImageView("After: model input (channels 0,1,2 shown as R,G,B)")
        self.stats_label = QLabel("Turn AIPP on or load a config to see the preview.")
        self.stats_label.setWordWrap(True)
        self.stats_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        choose = QPushButton("Preview image…")
        choose.clicked.connect(self._on_choose_image)
        preview = QWidget()
        preview_layout = QVBoxLayout(preview)
        preview_layout.setContentsMargins(4, 0, 0, 0)
        views = QHBoxLayout()
        views.addWidget(self.before_view, 1)
        views.addWidget(self.after_view, 1)
        preview_layout.addLayout(views, 1)
        preview_layout.addWidget(self.stats_label)
        preview_layout.addWidget(choose, 0, Qt.AlignmentFlag.AlignLeft)

        splitter = self.splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(scroll)
        splitter.addWidget(preview)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PREVIEW_DELAY_MS)
        self._timer.timeout.connect(self._start_preview)
        for widget in self._inputs():
            for name in ("valueChanged", "toggled", "currentIndexChanged"):
                signal = getattr(widget, name, None)
                if signal is not None:
                    signal.connect(self._on_edit)
                    break
        self.enabled_box.toggled.connect(self._on_edit)
        self._sync_enabled()

    def resizeEvent(self, event) -> None:  # Qt override
        super().resizeEvent(event)
        # Side by side when there is room; in a narrow dock the preview goes under the form.
        wanted = Qt.Orientation.Horizontal if event.size().width() >= NARROW_WIDTH else Qt.Orientation.Vertical
        if self.splitter.orientation() != wanted:
            self.splitter.setOrientation(wanted)
            self._scroll.setMinimumHeight(0 if wanted == Qt.Orientation.Horizontal else 150)
            if wanted == Qt.Orientation.Vertical:
                half = max(1, self.splitter.height() // 2)
                self.splitter.setSizes([half, half])

    def _inputs(self) -> list[QWidget]:
        return [self.format_combo, self.src_w, self.src_h, self.rbuv_swap, self.ax_swap, self.csc_switch,
                self.crop_box, self.crop_x, self.crop_y, self.crop_w, self.crop_h, *self.mean, *self.min,
                *self.var, self.pad_box, *self.pads, self.pad_value]

    # -- state ----------------------------------------------------------------------------------
    @property
    def aipp_enabled(self) -> bool:
        return self.enabled_box.isChecked()

    def op(self) -> AippOp:
        """The form as an AippOp (the CSC matrix is the JPEG one; loaded files keep theirs)."""
        op = AippOp(input_format=self.format_combo.currentText(), src_image_size_w=self.src_w.value(),
                    src_image_size_h=self.src_h.value(), rbuv_swap_switch=self.rbuv_swap.isChecked(),
                    ax_swap_switch=self.ax_swap.isChecked(), csc_switch=self.csc_switch.isChecked(),
                    crop=self.crop_box.isChecked(), load_start_pos_w=self.crop_x.value(),
                    load_start_pos_h=self.crop_y.value(), crop_size_w=self.crop_w.value(),
                    crop_size_h=self.crop_h.value(), padding=self.pad_box.isChecked(),
                    left_padding_size=self.pads[0].value(), right_padding_size=self.pads[1].value(),
                    top_padding_size=self.pads[2].value(), bottom_padding_size=self.pads[3].value(),
                    padding_value=self.pad_value.value(),
                    mean=[float(b.value()) for b in self.mean] + [0.0], min=[b.value() for b in self.min] + [0.0],
                    var_reci=[b.value() for b in self.var] + [1.0])
        if self._matrix is not None:
            op.matrix, op.input_bias, op.output_bias = self._matrix
        return op

    _matrix: tuple | None = None

    def set_op(self, op: AippOp, source: Path | None = None) -> None:
        """Fill the form from a parsed block (keeps its CSC matrix and biases)."""
        widgets = self._inputs()
        for widget in widgets:
            widget.blockSignals(True)
        try:
            self.format_combo.setCurrentText(op.input_format or "RGB888_U8")
            self.src_w.setValue(op.src_image_size_w)
            self.src_h.setValue(op.src_image_size_h)
            self.rbuv_swap.setChecked(op.rbuv_swap_switch)
            self.ax_swap.setChecked(op.ax_swap_switch)
            self.csc_switch.setChecked(op.csc_switch)
            self.crop_box.setChecked(op.crop)
            for box, value in ((self.crop_x, op.load_start_pos_w), (self.crop_y, op.load_start_pos_h),
                               (self.crop_w, op.crop_size_w), (self.crop_h, op.crop_size_h)):
                box.setValue(value)
            for i in range(3):
                self.mean[i].setValue(int(op.mean[i]))
                self.min[i].setValue(op.min[i])
                self.var[i].setValue(op.var_reci[i])
            self.pad_box.setChecked(op.padding)
            for box, value in zip(self.pads, (op.left_padding_size, op.right_padding_size,
                                              op.top_padding_size, op.bottom_padding_size)):
                box.setValue(value)
            self.pad_value.setValue(op.padding_value)
        finally:
            for widget in widgets:
                widget.blockSignals(False)
        self._matrix = (op.matrix, op.input_bias, op.output_bias) if op.matrix != [list(r) for r in JPEG_YUV2RGB] \
            or op.output_bias != [0, 0, 0] or op.input_bias != [0, 128, 128] else None
        self.source_path = source
        self._loaded_text = self.op().to_text() if source else None
        self.enabled_box.setChecked(True)
        self._on_edit()

    def unchanged_source(self) -> Path | None:
        """The loaded file, when the form still says exactly what it says (else None: write a new one)."""
        if self.source_path is not None and self._loaded_text == self.op().to_text():
            return self.source_path
        return None

    def set_model_hw(self, hw: tuple[int, int] | None) -> None:
        if hw != self.model_hw:
            self.model_hw = hw
            self._on_edit()

    # -- preview --------------------------------------------------------------------------------
    def _sync_enabled(self) -> None:
        for widget in self._inputs():
            widget.setEnabled(self.aipp_enabled)
        self.ax_swap.setEnabled(self.aipp_enabled and self.format_combo.currentText() == "XRGB8888_U8")

    def _on_edit(self, *_args) -> None:
        self._sync_enabled()
        self.changed.emit()
        if self.aipp_enabled:
            self._timer.start()
        else:
            self.stats_label.setText("AIPP is off: the converted model takes the same input as the original.")

    def _start_preview(self) -> None:
        from studio.tools.convert.preview import preview_aipp

        if not self.window().isVisible():
            return  # the window closed while the delay ran: its runner is going away
        if self._preview_job is not None and self._preview_job.active:
            self._preview_job.cancel()
        op, image, hw = self.op(), self.preview_image, self.model_hw
        handle = self.runner.start("AIPP preview", lambda cancel: preview_aipp(op, image, hw, cancel),
                                   key="convert-preview")
        handle.finished.connect(self._on_preview_ready)
        handle.failed.connect(self._on_preview_failed)
        self._preview_job = handle

    def _on_preview_ready(self, result) -> None:
        self.last_preview = result
        self.before_view.set_array(result.before)
        self.after_view.set_array(result.after)
        self.stats_label.setText(result.stats)

    def _on_preview_failed(self, exc: BaseException, _text: str) -> None:
        self.stats_label.setText("Preview failed")  # why: the notice board (the runner posts it)

    def _on_choose_image(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Preview image", "", "Images (*.png *.jpg *.jpeg *.bmp);;All files (*)")
        if path:
            self.preview_image = Path(path)
            self._start_preview()

    def _on_load_clicked(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "AIPP config", "", "AIPP configs (*.cfg *.aippconfig *.txt);;All files (*)")
        if path:
            self.load_requested.emit(Path(path))
