"""One line of a comparison: a matched pair of tensors with its metrics, or a one-side-only tensor.

Built by :func:`.compare.build_rows`, read back from a CSV by :mod:`.report_csv`, judged by
:mod:`.advisor` and :mod:`.underflow`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.core.serial import json_float
from studio.tools.accuracy.metrics import METRIC_NAMES, Metrics
from studio.tools.accuracy.tensors import TensorEntry


@dataclass
class Row:
    """One line of the comparison: a matched pair with its metrics, or a one-side-only tensor.

    ``golden_file`` / ``target_file`` are absolute locators, so a row can be drilled into later
    (also after reading the CSV back).
    """

    index: int
    name: str
    op_type: str
    golden: TensorEntry | None
    target: TensorEntry | None
    how: str
    note: str = ""
    metrics: Metrics | None = None
    violations: list[str] = field(default_factory=list)
    is_input: bool = False
    is_output: bool = False
    golden_file: str = ""
    target_file: str = ""
    underflow: dict | None = None  # the FP16 underflow this op blew up on (see .underflow), if any
    mask: bool = False  # on an attention-mask path (studio.core.fp16_graph): saturates in FP16, not judged

    MASK_NOTE = "attention mask: its large negative values saturate in FP16, harmless where they reach Softmax"

    @property
    def status(self) -> str:
        """``pass``, ``fail``, or how a one-side-only row came to be (``golden only``, ``fused``...)."""
        if self.metrics is None:
            return self.how
        if self.metrics.empty:
            return "empty"
        if self.mask:
            return "mask"
        return "fail" if self.violations else "pass"

    @property
    def passed(self) -> bool | None:
        """True / False for compared rows, None for one-side-only rows and empty tensors."""
        return None if self.metrics is None or self.metrics.empty or self.mask else not self.violations

    def __json__(self) -> dict:
        """The JSON row (:func:`studio.core.serial.to_json`): name, op_type, every metric, pass (plus
        shapes, dtypes, status)."""
        m = self.metrics
        data = {"index": self.index, "name": self.name, "op_type": self.op_type,
                "golden": self.golden.label if self.golden else None,
                "target": self.target.label if self.target else None,
                "golden_shape": list(self.golden.shape) if self.golden else None,
                "target_shape": list(self.target.shape) if self.target else None,
                "golden_dtype": self.golden.dtype if self.golden else None,
                "target_dtype": self.target.dtype if self.target else None,
                "status": self.status, "matched_by": self.how, "note": self.note}
        for name in METRIC_NAMES:
            data[name] = json_float(getattr(m, name)) if m else None
        for name in ("golden_mean", "golden_std", "target_mean", "target_std"):
            data[name] = json_float(getattr(m, name)) if m else None
        for name in ("target_nonfinite", "golden_nonfinite", "target_only_nonfinite", "finite_pairs"):
            data[name] = getattr(m, name) if m else None
        data["violations"] = list(self.violations)
        data["underflow"] = self.underflow
        data["mask"] = self.mask
        data["reason"] = m.reason if m else ""
        data["pass"] = self.passed
        return data

