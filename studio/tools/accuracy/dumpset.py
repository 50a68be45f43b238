"""One side of a comparison: the tensors of a dump, whatever wrote it.

Three kinds of dump folder are read, each by its own module:

* ``manifest.json`` + ``.npy`` files written by :mod:`studio.tools.accuracy.local_dump`;
* folders of ``{op}.{output}.{timestamp}.npy`` files (framework-side dump scripts, msaccucmp's
  converted NPU dumps ``{type}.{op}.{task}.{stream}.{ts}.{input|output}.{i}.npy``);
* Ascend NPU dump files ``{op_type}.{op_name}.{task}.{stream}.{timestamp}`` (binary, any depth).

Every reader returns a :class:`DumpSet`: a list of :class:`TensorEntry` in execution order,
whose data is loaded on demand (a dump can be far larger than memory).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from studio.errors import UserError
from studio.formats import ACCURACY, FileFormat, path_only

if TYPE_CHECKING:
    import numpy as np

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "studio-dump"


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
    from studio.npyfile import load_npy as load_checked

    return load_checked(path, mmap=mmap)


def load_dump(path: Path | str) -> DumpSet:
    """Read any supported dump folder (or one NPU dump file) at ``path``."""
    path = Path(path)
    if not path.exists():
        raise UserError("Dump not found", path, "Check the path; give a dump folder or an NPU dump file.")
    if path.is_file():
        from studio.tools.accuracy import npu_dump

        return npu_dump.read_dump_set(path)
    return read_dump_folder(path)


def dump_folder_kind(path: Path) -> str | None:
    """What the folder holds: ``"local"`` (a ``studio dump`` manifest), ``"npu"`` (NPU dump files,
    nested as ``{dump_path}/{time}/{device}/{model}/{model_id}/{index}/``), ``"npy"`` (.npy files in
    it), or None. Looks 7 levels deep through at most a few hundred entries, so it stays cheap
    enough to sniff with; detection and reading both ask it."""
    if (path / MANIFEST).is_file():
        return "local"
    from studio.tools.accuracy.npu_dump import is_dump_name

    budget, level = 400, [path]
    for _depth in range(7):
        below = []
        for folder in level:
            try:
                children = list(folder.iterdir())[:budget]
            except OSError:
                continue
            budget -= len(children)
            for child in children:
                if is_dump_name(child.name):
                    return "npu"
                if child.is_dir():
                    below.append(child)
            if budget <= 0:
                break
        if budget <= 0:
            break
        level = below
    try:
        return "npy" if any(p.suffix == ".npy" for p in path.iterdir()) else None
    except OSError:
        return None


def read_dump_folder(path: Path) -> DumpSet:
    """Read the dump folder at ``path``, whichever of the three kinds it is."""
    kind = dump_folder_kind(path)
    if kind == "local":
        return read_manifest(path)
    from studio.tools.accuracy import npu_dump, npy_folder

    if kind == "npu":
        return npu_dump.read_dump_set(path)
    if kind == "npy":
        return npy_folder.read_npy_folder(path)
    raise UserError("Folder holds no tensor dump", path,
                    "Give a folder written by `studio dump`, a folder of {op}.{output}.{timestamp}.npy files, "
                    "or a folder of Ascend NPU dump files.")


def read_manifest(root: Path) -> DumpSet:
    """Read a folder written by :func:`studio.tools.accuracy.local_dump.dump_model`."""
    path = root / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"Dump manifest is not valid JSON ({exc})", path, "Dump the model again.") from exc
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise UserError("Not a Studio dump manifest (missing \"format\": \"studio-dump\")", path,
                        "Dump the model again with `studio dump`.")
    entries = []
    try:
        for i, t in enumerate(data["tensors"]):
            entries.append(TensorEntry(op_name=t["op_name"], op_type=t["op_type"], index=int(t["output_index"]),
                                       kind=t.get("kind", "output"), order=int(t.get("order", i)),
                                       tensor=t["tensor"], shape=tuple(t["shape"]), dtype=t["dtype"],
                                       locator=t["file"], reads=[str(n) for n in t.get("inputs") or []]))
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"Dump manifest entry {len(entries)} is incomplete ({exc!r})", path,
                        "Dump the model again.") from exc
    _check_tensor_files(root, path, entries)
    inputs, outputs, mode = data.get("inputs", {}), data.get("outputs", []), data.get("mode", "fp32")
    model = data.get("model")
    if not isinstance(inputs, dict) or not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs) \
            or mode not in MODE_LABELS or not isinstance(model, (str, type(None))):
        raise UserError("Dump manifest has a damaged \"inputs\", \"outputs\", \"mode\" or \"model\" field", path,
                        "Dump the model again.")
    return DumpSet(root=root, kind="local", mode=mode, entries=entries,
                   model=model, inputs=list(inputs), graph_outputs=list(outputs), info=data)


def _check_tensor_files(root: Path, manifest: Path, entries: list[TensorEntry]) -> None:
    """Every tensor file a manifest names is a regular file inside the dump folder.

    A hand-edited or hostile manifest could name ``../../etc/passwd`` or a FIFO (reading one
    blocks forever); both are refused before any tensor is read.
    """
    base = root.resolve()
    for entry in entries:
        name = entry.locator.rpartition("#")[0] if "#" in entry.locator else entry.locator
        target = (root / name).resolve()
        if not target.is_relative_to(base):
            raise UserError(f"Dump manifest names a tensor file outside the dump folder: {name!r} "
                            f"(tensor {entry.tensor!r})", manifest,
                            "Dump the model again; a manifest lists files inside its own folder only.")
        if target.exists() and not target.is_file():
            raise UserError(f"Dump manifest names {name!r}, which is not a regular file "
                            f"(tensor {entry.tensor!r})", manifest,
                            "Dump the model again; tensor files are plain .npy files.")


DUMP_DIR = FileFormat("dump_dir", "Tensor dump folder", ACCURACY, lambda path: dump_folder_kind(path) is not None,
                      path_only(read_dump_folder), folder=True)
