"""What a dump holds, whatever wrote it: :class:`TensorEntry` and :class:`DumpSet`, and how a
tensor is loaded again from its locator.

The readers (:mod:`.dumpset` for Studio's manifests, :mod:`.npy_folder`, the NPU dump decoding in
:mod:`.npu_dump`) build these; everything after them (matching, metrics, reports) reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass
class TensorEntry:
    """One dumped tensor.

    Attributes:
        op_name: the op that produced (or, for ``kind == "input"``, consumed) it.
        op_type: ONNX / NPU op type; ``"Input"`` for a network input.
        index: output (or input) index on the op.
        kind: ``"output"`` or ``"input"``.
        order: execution order (0 = first).
        tensor: the tensor's own name when known (ONNX value name), else ``op:output:i``.
        shape, dtype: as stored (after NPU layouts were turned back into the original shape).
        locator: how to load it again, relative to the dump root (``file.npy`` or ``file#output.0``).
        original_ops: for NPU dumps, the original (framework) op names this fused op came from.
        reads: the tensor names the producing op reads (ONNX node inputs), when the dump records them.
    """

    op_name: str
    op_type: str
    index: int
    kind: str
    order: int
    tensor: str
    shape: tuple[int, ...]
    dtype: str
    locator: str
    original_ops: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``op:output:0`` — msaccucmp's TensorIndex."""
        return f"{self.op_name}:{self.kind}:{self.index}"


@dataclass
class DumpSet:
    """The tensors of one dump, in execution order, with how to load each.

    ``mode`` says what produced it: ``"fp32"`` (ONNX Runtime, as is), ``"fp16-sim"`` (FP16
    simulation), ``"npu"`` (Ascend NPU dump), ``"npy"`` (a folder of .npy files, unknown origin).
    """

    root: Path
    kind: str
    mode: str
    entries: list[TensorEntry]
    model: str | None = None
    inputs: list[str] = field(default_factory=list)
    graph_outputs: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def locate(self, entry: TensorEntry) -> str:
        """The absolute locator of ``entry`` (see :func:`load_locator`)."""
        return str(self.root / entry.locator)

    def load(self, entry: TensorEntry, mmap: bool = False) -> np.ndarray:
        """The data of ``entry``; ``mmap``: map .npy files so big tensors are read block by block."""
        return load_locator(self.locate(entry), mmap=mmap)

    def describe(self) -> str:
        """One line: what this dump is."""
        mode = MODE_LABELS.get(self.mode, self.mode)
        model = f" of {Path(self.model).name}" if self.model else ""
        return f"{mode}{model}: {len(self.entries)} tensors in {self.root}"


MODE_LABELS = {
    "fp32": "ONNX Runtime FP32 run",
    "fp16": "ONNX Runtime run of an FP16 model (CPU: ops compute in FP32 between Casts)",
    "fp16-sim": "FP16 simulation (weights and every op output rounded through FP16)",
    "npu": "Ascend NPU dump",
    "npy": "NumPy dump folder",
}
FP16_MODES = ("fp16-sim", "npu", "fp16")  # modes whose values went through FP16
# Modes whose dumps store each tensor in the dtype its op computed in (a converted FP16 model's run,
# an NPU dump): a float32 tensor there is an op kept in FP32. The simulation stores every tensor
# as float32, rounded through FP16 or not, so its dtype says nothing about the op's precision.
DTYPE_AS_RUN_MODES = ("npu", "fp16")


def load_locator(locator: str, mmap: bool = False) -> np.ndarray:
    """Load a tensor by locator: ``/path/file.npy`` or ``/path/npu_dump_file#output.0``."""
    if "#" in locator:
        from studio.tools.accuracy import npu_dump

        file, _, slot = locator.rpartition("#")
        kind, _, index = slot.partition(".")
        return npu_dump.load_tensor(Path(file), kind, int(index))
    return load_npy(Path(locator), mmap=mmap)


def load_npy(path: Path, mmap: bool = False) -> np.ndarray:
    """np.load with a UserError for missing, corrupt or impossible files (``mmap``: map it read-only)."""
    from studio.core.npyfile import load_npy as load_checked

    return load_checked(path, mmap=mmap)
