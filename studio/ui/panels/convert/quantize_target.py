"""The Quantize page's accuracy target, as ``studio quantize`` takes it: a min cosine, or at most P
points below FP32 of a task metric judged against ground truth — top-1 (a labels CSV, class names),
mAP@0.5 (boxes: VOC XML or COCO JSON; the detection head, score and NMS thresholds), Dice or IoU
(a folder of masks). :meth:`TargetFields.fields` gives the Request's fields; a missing one is a
UserError naming the form field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QFormLayout, QWidget

from studio.core.errors import UserError
from studio.ui.panels.convert.form_parts import combo, line, pick_file, side_by_side, spin, with_buttons

DEFAULT_MIN_COSINE = 0.99
DEFAULT_DROP = 1.0


@dataclass(frozen=True)
class Kind:
    """One target: its key (the task metric, or ``cosine``), the Request field it sets, the task it
    judges, and the ground truth it reads."""

    key: str
    label: str
    field: str
    task: str | None
    truth: str


KINDS = (
    Kind("cosine", "Min cosine", "min_cosine", None, ""),
    Kind("top1", "Max top-1 drop", "max_top1_drop", "classify", "labels CSV: image,label rows (as studio infer --truth)"),
    Kind("map50", "Max mAP@0.5 drop", "max_map_drop", "detect", "boxes: a folder of VOC XML files, or a COCO JSON"),
    Kind("dice", "Max Dice drop", "max_dice_drop", "segment", "masks: a folder of PNGs named like the pictures"),
    Kind("iou", "Max IoU drop", "max_iou_drop", "segment", "masks: a folder of PNGs named like the pictures"),
)
BY_KEY = {kind.key: kind for kind in KINDS}


class TargetFields:
    """The target's widgets (children of ``parent``), added to a form by :meth:`add_rows`."""

    def __init__(self, parent: QWidget):
        from studio.ops.quantize import choices

        self.parent = parent
        self.kind_combo = combo(parent, [(k.label, k.key) for k in KINDS],
                                "What the mixed model must meet (as studio quantize --min-cosine / --max-top1-drop / "
                                "--max-map-drop / --max-dice-drop / --max-iou-drop)")
        self.cosine_spin = spin(parent, 0.0, 1.0, 6, DEFAULT_MIN_COSINE, 0.001)  # 0.99999 is a real target
        self.cosine_spin.setToolTip("Every float output's cosine against FP32, on every sample, at least this")
        self.drop_spin = spin(parent, 0.0, 100.0, 1, DEFAULT_DROP, 0.5, " points below FP32")
        self.drop_spin.setToolTip("The task metric of the mixed model at most this many points below FP32's, on the "
                                  "evaluation pictures with ground truth")
        self.truth_edit = line(parent, "")
        self.names_edit = line(parent, "optional: class names, one a line (labels given by name)")
        self.head_combo = combo(parent, [("head: guessed", None)] + [(f"head: {h}", h) for h in choices("head")],
                                "Detection output layout (as studio infer --head); guessed from the outputs and said "
                                "in the notes when not chosen")
        self.conf_spin = spin(parent, 0.0, 1.0, 2, 0.25, 0.05)
        self.conf_spin.setPrefix("score ≥ ")
        self.conf_spin.setToolTip("Detection score threshold (as studio infer --conf)")
        self.nms_spin = spin(parent, 0.0, 1.0, 2, 0.45, 0.05)
        self.nms_spin.setPrefix("NMS IoU ")
        self.nms_spin.setToolTip("Detection NMS IoU threshold (as studio infer --iou)")
        self.kind_combo.currentIndexChanged.connect(self._on_kind)
        self._rows: dict[str, QWidget] = {}

    def add_rows(self, form: QFormLayout) -> None:
        """The target's rows: the target and its value, the truth, class names, the detection settings."""
        value = side_by_side(self.parent, self.kind_combo, self.cosine_spin, self.drop_spin)
        detect = side_by_side(self.parent, self.head_combo, self.conf_spin, self.nms_spin)
        truth = with_buttons(self.parent, self.truth_edit, ("Folder…", self._pick_truth_folder),
                             ("File…", self._pick_truth_file))
        names = with_buttons(self.parent, self.names_edit, ("…", self._pick_names))
        self._rows = {"truth": truth, "names": names, "detect": detect}
        form.addRow("Target", value)
        form.addRow("Truth", truth)
        form.addRow("Class names", names)
        form.addRow("Detections", detect)
        self._on_kind()

    def kind(self) -> Kind:
        return BY_KEY[self.kind_combo.currentData()]

    def set_kind(self, key: str) -> None:
        """Choose the target ``key`` (``cosine``, ``top1``, ``map50``, ``dice``, ``iou``)."""
        self.kind_combo.setCurrentIndex(self.kind_combo.findData(key))

    def fields(self) -> dict:
        """The Request's target fields; a task target without ground truth names the Truth field."""
        kind = self.kind()
        if kind.key == "cosine":
            return {"min_cosine": self.cosine_spin.value()}
        truth = self.truth_edit.text().strip()
        if not truth:
            raise UserError(f"A {kind.label.lower()} target needs ground truth", "Quantize page, Truth",
                            f"Give the pictures' {kind.truth}, or use the min cosine target.")
        names = self.names_edit.text().strip()
        fields = {kind.field: self.drop_spin.value(), "truth": Path(truth), "task": kind.task,
                  "labels": Path(names) if names and kind.key in ("top1", "map50") else None}
        if kind.key == "map50":
            fields.update(head=self.head_combo.currentData(), conf=self.conf_spin.value(), iou=self.nms_spin.value())
        return fields

    # -- handlers -------------------------------------------------------------------------------
    def _on_kind(self, _index: int = 0) -> None:
        kind = self.kind()
        cosine = kind.key == "cosine"
        self.cosine_spin.setVisible(cosine)
        self.drop_spin.setVisible(not cosine)
        self.truth_edit.setPlaceholderText(kind.truth or "(the min cosine target needs no ground truth)")
        self.truth_edit.setToolTip(self.truth_edit.placeholderText())
        for name, shown in (("truth", not cosine), ("names", kind.key in ("top1", "map50")),
                            ("detect", kind.key == "map50")):
            if name in self._rows:
                self._rows[name].setEnabled(shown)
                self._rows[name].setToolTip("" if shown else f"not used by a {kind.label.lower()} target")

    def _pick_truth_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self.parent, "Ground truth folder (boxes or masks)")
        if path:
            self.truth_edit.setText(path)

    def _pick_truth_file(self) -> None:
        pick_file(self.parent, self.truth_edit, "Ground truth (*.csv *.json);;All files (*)")

    def _pick_names(self) -> None:
        pick_file(self.parent, self.names_edit, "Text (*.txt *.names);;All files (*)")

