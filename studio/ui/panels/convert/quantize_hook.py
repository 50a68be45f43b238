"""Page 4 of the Converter wizard joined to the panel: the Quantize page in the wizard's stack, its
job controller, and the default output that follows page 1's model."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QScrollArea

from studio.ui.panels.convert.quantize_job import QuantizeJob
from studio.ui.panels.convert.quantize_page import QuantizePage
from studio.ui.panels.convert.quantize_state import default_output


def add_quantize_page(panel):
    """Add the Quantize page to ``panel`` (a ConvertPanel); returns (page, its QuantizeJob)."""
    page = QuantizePage(panel)
    scroll = QScrollArea(panel)  # as the other pages: a short dock scrolls instead of growing the window
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QScrollArea.Shape.NoFrame)
    scroll.setWidget(page)
    panel.stack.addWidget(scroll)
    job = QuantizeJob(page, panel.runner, panel.links, panel.model_page.model_path, panel._log, panel.status.emit,
                      panel.request_open.emit, panel, host_context=lambda: panel.host_context)
    auto = {"output": ""}  # the output this hook filled in, replaced when the model changes

    def on_model(path) -> None:
        text = page.output_edit.text().strip()
        if text and text != auto["output"]:
            return  # the user's own path stays
        folder = panel.workspace_folder and Path(panel.workspace_folder) / "quantize"
        auto["output"] = str(default_output(Path(path), folder))
        page.output_edit.setText(auto["output"])

    panel.model_page.model_chosen.connect(on_model)
    return page, job
