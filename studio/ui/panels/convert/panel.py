"""The Converter panel: MindStudio's three-step Model Converter, over studio.tools.convert.

Pages: (1) model and inputs, (2) AIPP pre-processing with a live preview, (3) advanced options
with the Command Preview. Finish runs the conversion as a job with a streamed log; the result
opens in the graph panel and "Compare with original" asks the accuracy panel to compare them.
Files routed here: AIPP configs fill page 2, fusion switch files page 3, TensorFlow and Caffe
models start the ATC path on page 1. In ATC mode page 1's "Run ATC on" picks this computer or an
SSH host (``studio.ops.atc``, the operation the CLI runs too); the .om that comes back opens in
the graph panel. ``links.convert_model`` (the graph panel's "Convert…") loads a model on page 1
and brings this panel to the front.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import StudioError, UserError
from studio.core.formats import Detected
from studio.ui.jobs import JobRunner
from studio.ui.links import PanelLinks
from studio.ui.panels.base import Panel, state_property
from studio.ui.panels.convert.advanced_page import AdvancedPage
from studio.ui.panels.convert.aipp_page import AippPage
from studio.ui.panels.convert.model_page import ATC, ModelPage
from studio.ui.panels.convert.quantize_hook import add_quantize_page
from studio.ui.panels.convert.running import Running
from studio.ui.panels.convert.state import QUANTIZE_STEP, STEPS, ConvertState, aipp_config_path, call_job, read_aipp


class ConvertPanel(Running, Panel):
    """The model converter wizard."""

    NAME = "convert"
    TITLE = "Converter"

    result_path = state_property("result_path", "The converted model, or None.")
    last_report = state_property("last_report", "The ConvertReport of the latest local conversion.")

    def __init__(self, runner: JobRunner, parent: QWidget | None = None, links: PanelLinks | None = None):
        super().__init__(runner, parent, links)
        self.state = ConvertState()
        self.job = None
        self.model_page = ModelPage(self)
        self.aipp_page = AippPage(runner, self)
        self.advanced_page = AdvancedPage(self)
        self.model_page.output_folder = self._output_folder
        self._aipp_for: Path | None = None  # the model the AIPP page was set up for

        self.step_buttons = QButtonGroup(self)
        steps_row = QHBoxLayout()
        for index, text in enumerate(STEPS):
            button = QPushButton(text, self)
            button.setCheckable(True)
            button.setFlat(True)
            button.setStyleSheet("QPushButton { padding: 4px 10px; border: none; } QPushButton:checked { "
                                 "background: palette(highlight); color: palette(highlighted-text); border-radius: 3px; }")
            self.step_buttons.addButton(button, index)
            steps_row.addWidget(button)
        steps_row.addStretch(1)
        self.step_buttons.idClicked.connect(self.go_to)

        self.stack = QStackedWidget(self)
        for page in (self.model_page, self.aipp_page, self.advanced_page):
            # Scrolled, so a short dock never forces the window taller than the screen.
            scroll = QScrollArea(self)
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QScrollArea.Shape.NoFrame)
            scroll.setWidget(page)
            self.stack.addWidget(scroll)

        self.log = QPlainTextEdit(self)
        self.log.setReadOnly(True)
        self.log.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.log.setPlaceholderText("The conversion log appears here when you press Convert.")
        self.log.setMaximumBlockCount(5000)
        self.log.setMinimumHeight(40)

        self.back_button = QPushButton("Back", self)
        self.next_button = QPushButton("Next", self)
        self.finish_button = QPushButton("Convert", self)
        self.finish_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.hide()
        self.open_button = QPushButton("Open result", self)
        self.compare_button = QPushButton("Compare with original", self)
        self.compare_button.setToolTip("Dump both models and compare them op by op in the Accuracy panel")
        for button in (self.open_button, self.compare_button):
            button.setEnabled(False)
        self.back_button.clicked.connect(lambda: self.go_to(self.stack.currentIndex() - 1))
        self.next_button.clicked.connect(lambda: self.go_to(self.stack.currentIndex() + 1))
        self.finish_button.clicked.connect(lambda: self.finish())
        self.cancel_button.clicked.connect(self._on_cancel)
        self.open_button.clicked.connect(self._on_open_result)
        self.compare_button.clicked.connect(self._on_compare)
        buttons = QHBoxLayout()
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.compare_button)
        buttons.addStretch(1)
        for button in (self.back_button, self.next_button, self.cancel_button, self.finish_button):
            buttons.addWidget(button)

        top = QWidget(self)
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(steps_row)
        top_layout.addWidget(self.stack, 1)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(top)
        splitter.addWidget(self.log)
        splitter.setStretchFactor(0, 4)
        splitter.setStretchFactor(1, 1)
        splitter.setCollapsible(0, False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 6)
        layout.addWidget(splitter, 1)
        layout.addLayout(buttons)

        self._preview_timer = QTimer(self)
        self._preview_timer.setSingleShot(True)
        self._preview_timer.setInterval(100)
        self._preview_timer.timeout.connect(self.update_command)
        for page in (self.model_page, self.aipp_page, self.advanced_page):
            page.changed.connect(self._preview_timer.start)
        self.model_page.model_chosen.connect(self._on_model_chosen)
        self.aipp_page.enabled_box.toggled.connect(self._on_aipp_toggled)
        self.model_page.atc_radio.toggled.connect(self.advanced_page.set_atc_mode)
        self.aipp_page.load_requested.connect(self.load_aipp)
        self.advanced_page.load_requested.connect(self.load_fusion_switch)
        self.advanced_page.set_atc_mode(False)
        self.links.convert_model.connect(self._on_convert_model)
        self.links.convert_original.connect(self._on_convert_model)
        self.quantize_page, self.quantize = add_quantize_page(self)  # page 4, run by its own button
        self.go_to(0)
        self.update_command()

    # -- navigation ---------------------------------------------------------------------------
    def go_to(self, index: int) -> None:
        index = max(0, min(index, self.stack.count() - 1))
        self.stack.setCurrentIndex(index)
        self.step_buttons.button(index).setChecked(True)
        self.back_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < self.stack.count() - 1)
        self.finish_button.setVisible(index != QUANTIZE_STEP)
        if index == 1:
            self.aipp_page.set_model_hw(self.model_page.model_hw())
        if index == 2:
            self.update_command()

    # -- files routed here ----------------------------------------------------------------------
    def open_file(self, detected: Detected) -> None:
        path = detected.path
        if detected.format.id == "aipp_cfg":
            self.load_aipp(path)
        elif detected.format.id == "fusion_switch":
            self.load_fusion_switch(path)
        else:
            self.model_page.set_model(path)
            self.go_to(0)
        self.status.emit(f"Converter: {path.name} ({detected.format.label})")

    def _on_convert_model(self, path, repro=None) -> None:
        """Another panel (the graph's "Convert…") asks to convert ``path``: load it on page 1
        (``repro``: the repro made from it that was on screen)."""
        path = Path(path)
        self.links.focus.emit(self.NAME)
        if path.suffix.lower() == ".om":
            self._log(f"{path.name} is already an offline model (.om): open the model it was built from "
                      "(.onnx, .pb, .prototxt, .air) and press Convert… again.")
            self.status.emit(f"Converter: {path.name} is already converted")
            return
        self.model_page.set_model(path)  # another model clears the last one's output path
        self.go_to(0)
        why = f", the original of the repro {Path(repro).parent.name}/{Path(repro).name}" if repro is not None else ""
        self.status.emit(f"Converter: {path.name}{why} — choose the options and press Convert")

    def load_aipp(self, path: Path) -> None:
        """Parse an AIPP config as a job, then fill page 2 with its first block."""
        handle = self.runner.start(f"Reading {Path(path).name}", lambda cancel: call_job(read_aipp, Path(path)))
        handle.finished.connect(lambda result: self._on_aipp_loaded(Path(path), *result))  # failure: the notice board

    def _on_aipp_loaded(self, path: Path, config, hints: dict) -> None:
        if "preview" in hints:
            self.aipp_page.preview_image = hints["preview"]
        self.aipp_page.set_op(config.ops[0], path)
        if len(config.ops) > 1:
            self._log(f"{path.name}: {len(config.ops)} aipp_op blocks; the form shows the first, the file is used as is.")
        # The config is for the model its comment names, else for the model on page 1.
        self._aipp_for = hints.get("model") or self.model_page.model_path()
        if "model" in hints and self.model_page.model_path() is None:
            self.model_page.set_model(hints["model"])
        self._log(f"Loaded AIPP config {path}")
        self.go_to(1)

    def load_fusion_switch(self, path: Path) -> None:
        """Parse a fusion switch file as a job, then apply it on page 3."""
        from studio.tools.convert.fusion_switch import load_fusion_switch

        handle = self.runner.start(f"Reading {Path(path).name}", lambda cancel: call_job(load_fusion_switch, Path(path)))
        handle.finished.connect(self._on_switches_loaded)  # failure: the notice board

    def _on_switches_loaded(self, switches) -> None:
        self.advanced_page.set_switches(switches)
        self._log(f"Loaded fusion switch file {switches.path}")
        self.go_to(2)

    def _output_folder(self) -> Path | None:
        """Where converted models go by default: the workspace's ``convert/`` folder."""
        return Path(self.workspace_folder) / "convert" if self.workspace_folder is not None else None

    def _on_aipp_toggled(self, on: bool) -> None:
        self._aipp_for = self.model_page.model_path() if on else None

    def _aipp_off(self, why: str) -> None:
        """Untick AIPP (its settings stay in the form for a model they fit) and say why."""
        self.aipp_page.enabled_box.setChecked(False)
        self._log(f"AIPP pre-processing switched off: {why}. Tick it on page 2 if this model takes pictures.")

    def _on_model_chosen(self, path: Path) -> None:
        from studio.tools.convert.model_info import inspect_model

        aipp_for = self._aipp_for
        if self.aipp_page.aipp_enabled and aipp_for is not None and Path(path) != Path(aipp_for):
            self._aipp_off(f"it was set up for {Path(aipp_for).name}, not {Path(path).name}")

        handle = self.runner.start(f"Reading {path.name}", lambda cancel: inspect_model(path, cancel))
        handle.finished.connect(self._on_model_info)  # failure: the notice board

    def _on_model_info(self, info) -> None:
        self.model_page.show_info(info)
        # Only ONNX models list their inputs; an image input has 4 dims (N, C, H, W or N, H, W, C).
        if self.aipp_page.aipp_enabled and info.inputs and not any(len(t.dims) == 4 for t in info.inputs):
            shapes = ", ".join(f"{t.name} [{t.shape_text()}]" for t in info.inputs)
            self._aipp_off(f"{info.path.name} has no image input (4-D); its inputs: {shapes}")

    # -- options and the command preview ------------------------------------------------------------
    def planned_aipp(self) -> tuple[Path | None, str | None]:
        """(path of the AIPP config the conversion uses, text to write there or None if it exists)."""
        if not self.aipp_page.aipp_enabled:
            return None, None
        loaded = self.aipp_page.unchanged_source()
        if loaded is not None:
            return loaded, None
        return aipp_config_path(self.model_page.output_edit.text()), self.aipp_page.op().to_text()

    def options(self):
        """The ConvertOptions the three pages describe."""
        from studio.tools.convert.atc_command import split_extra_args
        from studio.tools.convert.options import ConvertOptions

        page1, page3 = self.model_page, self.advanced_page
        atc = page1.mode == ATC
        model = page1.model_path()
        if model is None:
            raise UserError("No model chosen", "page 1, Model file", "Choose the model to convert.")
        output = page1.output_edit.text().strip() or None
        aipp_path, _ = self.planned_aipp()
        keep = [s.strip() for s in page3.keep_fp32.text().split(",") if s.strip()]
        return ConvertOptions(
            model=model, output=Path(output) if output else None,
            framework=page1.framework_combo.currentData() if atc else None,
            weight=Path(page1.weight_edit.text()) if atc and page1.weight_edit.text().strip() else None,
            soc_version=page1.soc_combo.currentText().strip() if atc else None,
            input_format=page1.input_format_combo.currentData() if atc else None,
            input_shape=page1.input_shape_spec(), output_type=page1.output_type_combo.currentText(),
            insert_op_conf=aipp_path,
            fusion_switch_file=page3.switches.path if page3.switches and atc else None,
            op_debug_level=page3.debug_spin.value() or None if atc else None,
            log=page3.log_combo.currentData() if atc else None,
            precision_mode=page3.precision_combo.currentData() if atc else None,
            out_nodes=page3.out_nodes.text().strip().strip('"') or None,
            dynamic_batch_size=page3.dynamic_batch.text().strip().strip('"') or None if atc else None,
            dynamic_image_size=page3.dynamic_image.text().strip().strip('"') or None if atc else None,
            extra_args=split_extra_args(page3.extra.text()) if atc else [],
            keep_fp32_ops=keep if not atc else [], fusions={} if atc else page3.pass_switches(),
            validate=page3.validate_box.isChecked() and not atc,
            # With AIPP, validate on the picture being previewed (through the same pre-processing).
            validate_image=self.aipp_page.preview_image if (page3.validate_box.isChecked() and not atc
                                                            and self.aipp_page.aipp_enabled) else None)

    def update_command(self) -> None:
        """Rebuild the Command Preview (cheap: no file is read here)."""
        from studio.tools.convert.atc_command import build_atc_argv, preview

        try:
            options = self.options()
            if self.model_page.mode == ATC:
                text = preview(build_atc_argv(options, check_files=False))
            else:
                if options.output is None:
                    raise UserError("No output path", "page 1, Output", "Give the converted model's path.")
                text = preview(options.cli_argv())
                off = [name for name, on in options.fusions.items() if not on]
                if off:
                    text += f"\n# passes off in the wizard: {', '.join(off)}"
            self.advanced_page.show_command(text, None)
        except StudioError as exc:
            self.advanced_page.show_command("", str(exc))

    # -- running ------------------------------------------------------------------------------
    def _log(self, text: str) -> None:
        self.log.appendPlainText(text)
