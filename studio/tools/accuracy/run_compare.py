"""Compare two in-memory runs of one ONNX model (FP32 and the target, every tensor kept) exactly as
two dumps are compared: the same rows, metrics, masks, underflows, findings and diagnosis.

The reduction, the FP32-set search and the conversion's validation hold their runs as
``{tensor: array}``; going through this module, rather than judging tensors their own way, is what
makes them name the same cause as ``fp16-check`` and ``compare`` on the same model.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from studio.core.jobs import CancelToken, Progress
from studio.tools.accuracy.compare import CompareResult, build_rows, judge_rows
from studio.tools.accuracy.matching import Pair
from studio.tools.accuracy.metrics import Thresholds
from studio.tools.accuracy.tensors import DumpSet, TensorEntry

if TYPE_CHECKING:
    import onnx


class RunDump(DumpSet):
    """A :class:`DumpSet` whose tensors are arrays in memory (``locator`` is the tensor name)."""

    def __init__(self, label: str, mode: str, entries: list[TensorEntry], arrays: dict[str, np.ndarray],
                 inputs: list[str], outputs: list[str]):
        super().__init__(Path(label), "memory", mode, entries, None, inputs, outputs, {})
        self.arrays = arrays

    def locate(self, entry: TensorEntry) -> str:
        return f"{self.root}:{entry.locator}"

    def load(self, entry: TensorEntry, mmap: bool = False) -> np.ndarray:
        return np.asarray(self.arrays[entry.locator])


def compare_runs(model: onnx.ModelProto, golden: dict[str, np.ndarray], target: dict[str, np.ndarray],
                 thresholds: Thresholds | None = None, target_mode: str = "fp16-sim",
                 cancel: CancelToken | None = None) -> Generator[Progress, None, CompareResult]:
    """Job: a :class:`CompareResult` of ``target`` against ``golden`` over ``model``'s tensors in
    graph order (graph inputs first); tensors missing on either side are left out."""
    inits = {i.name for i in model.graph.initializer}
    inputs = [v.name for v in model.graph.input if v.name not in inits]
    outputs = [o.name for o in model.graph.output]
    entries: list[TensorEntry] = []
    # A target run returns the op outputs; the inputs it was fed are the golden ones (as a dump records them).
    target = {**{name: golden[name] for name in inputs if name in golden and name not in target}, **target}
    for name in inputs:
        if name in golden and name in target:
            entries.append(_entry(name, "Input", 0, "input", len(entries), name, golden[name], []))
    for index, node in enumerate(model.graph.node):
        op = node.name or f"{node.op_type}_{index}"
        for slot, name in enumerate(node.output):
            if name and name in golden and name in target:
                entries.append(_entry(op, node.op_type, slot, "output", len(entries), name, golden[name],
                                      [i for i in node.input if i]))
    g = RunDump("FP32 run", "fp32", entries, golden, inputs, outputs)
    t = RunDump(f"{target_mode} run", target_mode, entries, target, inputs, outputs)
    rows = build_rows([Pair(e, e, "tensor name") for e in entries], g, t)
    thresholds = thresholds or Thresholds()
    return (yield from judge_rows(rows, g, t, thresholds, cancel=cancel, model=model))


def _entry(op: str, op_type: str, slot: int, kind: str, order: int, tensor: str, array: np.ndarray,
           reads: list[str]) -> TensorEntry:
    array = np.asarray(array)
    return TensorEntry(op, op_type, slot, kind, order, tensor, tuple(array.shape), str(array.dtype), tensor,
                       reads=reads)
