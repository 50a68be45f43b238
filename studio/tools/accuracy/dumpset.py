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

from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import ACCURACY, FileFormat, path_only
from studio.core.safe_read import load_json
from studio.tools.accuracy.tensors import FP16_MODES, MODE_LABELS, DumpSet, TensorEntry, load_locator, load_npy

# The data model lives in .tensors; it is named here too, where callers have always found it.
__all__ = ["DUMP_DIR", "FP16_MODES", "MANIFEST", "MANIFEST_FORMAT", "MODE_LABELS", "DumpSet", "TensorEntry",
           "dump_folder_kind", "load_dump", "load_locator", "load_npy", "read_dump_folder", "read_manifest"]

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "studio-dump"


def load_dump(path: Path | str) -> DumpSet:
    """Read any supported dump folder (or one NPU dump file) at ``path``."""
    path = Path(path)
    if not path.exists():
        raise UserError("Dump not found", path, "Check the path; give a dump folder or an NPU dump file.")
    if path.is_file():
        return read_npu_dump_set(path)
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
    from studio.tools.accuracy import npy_folder

    if kind == "npu":
        return read_npu_dump_set(path)
    if kind == "npy":
        return npy_folder.read_npy_folder(path)
    raise UserError("Folder holds no tensor dump", path,
                    "Give a folder written by `studio dump`, a folder of {op}.{output}.{timestamp}.npy files, "
                    "or a folder of Ascend NPU dump files.")


def read_npu_dump_set(path: Path) -> DumpSet:
    """All Ascend NPU dump files under ``path`` (or the one file), in timestamp order, as a DumpSet."""
    from studio.tools.accuracy import npu_dump

    files = [path] if path.is_file() else sorted(p for p in path.rglob("*")
                                                 if p.is_file() and npu_dump.is_dump_name(p.name))
    if not files:
        raise UserError("No NPU dump files found", path, "Point at the dump_path folder of an acl.json dump.")
    dumps = sorted((npu_dump.read_header(f) for f in files), key=lambda d: (d.timestamp, d.task_id))
    root = path if path.is_dir() else path.parent
    entries = []
    for dump in dumps:
        rel = dump.path.relative_to(root).as_posix()
        for tensor in dump.inputs + dump.outputs:
            shape = tuple(tensor.original_shape or tensor.shape)
            entries.append(TensorEntry(op_name=dump.op_name, op_type=dump.op_type, index=tensor.index,
                                       kind=tensor.kind, order=len(entries), tensor=f"{dump.op_name}:{tensor.kind}:{tensor.index}",
                                       shape=shape, dtype=tensor.dtype_name, locator=f"{rel}#{tensor.kind}.{tensor.index}",
                                       original_ops=[tensor.original_op] if tensor.original_op else []))
    return DumpSet(root=root, kind="npu", mode="npu", entries=entries)


def read_manifest(root: Path) -> DumpSet:
    """Read a folder written by :func:`studio.tools.accuracy.local_dump.dump_model`."""
    path = root / MANIFEST
    try:
        data = load_json(path, "dump manifest")
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"Dump manifest is not valid JSON ({exc})", path, "Dump the model again.") from exc
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise UserError("Not a Studio dump manifest (missing \"format\": \"studio-dump\")", path,
                        "Dump the model again with `studio dump`.")
    entries = []
    try:
        for i, t in enumerate(data["tensors"]):
            entries.append(TensorEntry(op_name=_text(t, "op_name"), op_type=_text(t, "op_type"),
                                       index=_whole(t["output_index"]), kind=_text(t, "kind", "output"),
                                       order=_whole(t.get("order", i)), tensor=_text(t, "tensor"),
                                       shape=tuple(_whole(d) for d in _list(t["shape"])), dtype=_text(t, "dtype"),
                                       locator=_text(t, "file"), reads=[str(n) for n in _list(t.get("inputs") or [])]))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise UserError(f"Dump manifest entry {len(entries)} is incomplete or damaged ({exc!r})"[:300], path,
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


def _text(entry: dict, key: str, default: str | None = None) -> str:
    """A text field of a manifest entry (``dtype: true`` or a number is refused, not carried on)."""
    value = entry[key] if default is None else entry.get(key, default)
    if not isinstance(value, str):
        raise TypeError(f"{key} is {value!r}, not text")
    return value


def _whole(value) -> int:
    """A whole number of a manifest entry (NaN, true, 1.5 and text are refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a whole number")
    return value


def _list(value) -> list:
    if not isinstance(value, list):
        raise TypeError(f"{value!r} is not a list")
    return value


def _check_tensor_files(root: Path, manifest: Path, entries: list[TensorEntry]) -> None:
    """Every tensor file a manifest names is a regular file inside the dump folder.

    A hand-edited or hostile manifest could name ``../../etc/passwd`` or a FIFO (reading one
    blocks forever); both are refused before any tensor is read.
    """
    base = root.resolve()
    seen: set[str] = set()
    for entry in entries:
        name = entry.locator.rpartition("#")[0] if "#" in entry.locator else entry.locator
        if name in seen:  # a file holding many tensors is checked once (resolve is a walk of the path)
            continue
        seen.add(name)
        try:
            target = (root / name).resolve()
            special = target.exists() and not target.is_file()
        except (OSError, ValueError, RuntimeError) as exc:  # a name too long, a NUL, a symlink loop
            raise UserError(f"Dump manifest names a tensor file that cannot be opened: {name[:80]!r} ({exc})"[:300],
                            manifest, "Dump the model again.") from exc
        if not target.is_relative_to(base):
            raise UserError(f"Dump manifest names a tensor file outside the dump folder: {name!r} "
                            f"(tensor {entry.tensor!r})", manifest,
                            "Dump the model again; a manifest lists files inside its own folder only.")
        if special:
            raise UserError(f"Dump manifest names {name!r}, which is not a regular file "
                            f"(tensor {entry.tensor!r})", manifest,
                            "Dump the model again; tensor files are plain .npy files.")


DUMP_DIR = FileFormat("dump_dir", "Tensor dump folder", ACCURACY, lambda path: dump_folder_kind(path) is not None,
                      path_only(read_dump_folder), folder=True)


def match_npu_dump(path: Path, head: bytes) -> bool:
    """A dump file name (the rule :func:`.npu_dump.parse_name` reads), then a uint64 header length that fits."""
    from studio.tools.accuracy.npu_dump import is_dump_name

    if not is_dump_name(path.name) or len(head) < 9:
        return False
    header_len = int.from_bytes(head[:8], "little")
    return 0 < header_len < path.stat().st_size


NPU_DUMP = FileFormat("npu_dump", "Ascend NPU dump file", ACCURACY, match_npu_dump, path_only(read_npu_dump_set))
