"""The Quantize page's Ascend fields, as ``studio quantize --ascend DIR --soc SOC --host NAME`` takes
them: write AMCT's configuration (the rollback set as its skip layers), the calibration samples and
``commands.sh`` (``amct_onnx calibration``, then the ``atc`` line that takes its output) into a
folder, and optionally run them on an SSH host through the operations layer, the deployable model,
the .om and the run's report coming back into that folder.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QCheckBox, QFileDialog, QFormLayout, QWidget

from studio.core.errors import UserError
from studio.ui.panels.convert.form_parts import line, with_buttons
from studio.ui.panels.convert.host_picker import LOCAL, Choices, HostPicker

#: The host picker's words here: its first choice writes the files without running them.
WRITE_ONLY = Choices(here="Nowhere: write the files only", always=True,
                     here_hint="run sh commands.sh on your Ascend host yourself",
                     host_hint="AMCT and ATC run there; the .om, the deployable model and the log come back")


class AscendFields:
    """The Ascend widgets (children of ``parent``), added to a form by :meth:`add_rows`."""

    def __init__(self, parent: QWidget, default_folder):
        """``default_folder()``: the folder offered when the box is ticked with none given (shown in
        the field, so the user sees it before the run)."""
        self.parent = parent
        self.default_folder = default_folder
        self.box = QCheckBox("Write AMCT and ATC files", parent)
        self.box.setToolTip("AMCT's configuration with the rollback set as skip_layers, the samples as .bin, and "
                            "commands.sh: amct_onnx calibration, then atc (studio quantize --ascend DIR)")
        self.folder_edit = line(parent, "folder for amct.cfg, data/ and commands.sh")
        self.soc_edit = line(parent, "ATC --soc_version (default Ascend310P3, said in commands.sh)")
        self.hosts = HostPicker(parent, WRITE_ONLY)
        self.hosts.setToolTip("Run commands.sh on this host (studio quantize --host NAME)")
        self._folder_row = with_buttons(parent, self.folder_edit, ("…", self._pick_folder))
        self.box.toggled.connect(self._on_toggled)

    def add_rows(self, form: QFormLayout) -> None:
        form.addRow("Ascend", self.box)
        form.addRow("Folder", self._folder_row)
        form.addRow("SoC", self.soc_edit)
        form.addRow("Run on", self.hosts)
        self._on_toggled(self.box.isChecked())

    def fields(self) -> dict:
        """The Request's ``ascend`` and ``soc`` (nothing when the box is not ticked)."""
        if not self.box.isChecked():
            return {}
        folder = self.folder_edit.text().strip()
        if not folder:
            raise UserError("No folder for the Ascend files", "Quantize page, Ascend folder",
                            "Choose a folder, or untick Write AMCT and ATC files.")
        return {"ascend": Path(folder), "soc": self.soc_edit.text().strip() or None}

    def host(self) -> str | None:
        """The host to run the files on (``--host``), None to write them only."""
        if not self.box.isChecked():
            return None
        name = self.hosts.current_name()
        return None if name in (None, LOCAL) else name

    def _on_toggled(self, on: bool) -> None:
        for widget in (self._folder_row, self.soc_edit, self.hosts):
            widget.setEnabled(on)
        if on:
            self.hosts.refresh()  # a host added in the Hosts panel meanwhile is offered
        if on and not self.folder_edit.text().strip():
            folder = self.default_folder()
            if folder is not None:
                self.folder_edit.setText(str(folder))

    def _pick_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self.parent, "Folder for the Ascend files")
        if path:
            self.folder_edit.setText(path)
