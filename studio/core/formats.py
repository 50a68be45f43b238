"""Which kind of file is this, and what reads it: the one reader registry.

Each format lives in the module that reads it (Netron's way): that module defines a cheap
``match(path, head)`` over the first few KiB (or ``match(path)`` for a folder) and the ``open``
that reads it, and ties them together in a :class:`FileFormat`. This module only keeps the
catalogue: the formats in the order they are tried. Detection and reading therefore cannot
disagree: what ``detect`` picks is read by the very module whose ``match`` said yes.

Detection looks at magic bytes and content first and uses the extension only as a tie-breaker
(a ``.om`` that lacks the ``IMOD`` magic is refused, a trace saved as ``.txt`` is still a trace).
The catalogue names the format modules as strings and imports them on first use: the engines sit
above this module, and a window or a ``studio info`` should not pay for modules it never needs.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress

HEAD_BYTES = 8192

# Panel names (the main window maps them to docks).
GRAPH, PROFILER, ACCURACY, CONVERT, WORKSPACE = "graph", "profiler", "accuracy", "convert", "workspace"
ADVISOR = "advisor"
GALLERY = "gallery"
CLUSTER = "cluster"


@dataclass(frozen=True)
class FileFormat:
    """A format Studio recognises, the panel that opens it, and how it is matched and read.

    ``match`` is ``(path, head) -> bool`` for a file (``head``: its first :data:`HEAD_BYTES`) and
    ``(path) -> bool`` for a folder. ``open`` is ``(path, cancel=None)`` and returns what the
    format reads into, or a job generator (yielding Progress) that returns it; None for the few
    formats Studio only hands on (a TensorFlow graph goes to ATC as it is). ``check`` is a
    deeper, still cheap, integrity check for ``studio info`` (raises UserError).
    """

    id: str
    label: str
    panel: str
    match: Callable[..., bool] = field(compare=False, repr=False, default=None)
    open: Callable[..., Any] | None = field(compare=False, repr=False, default=None)
    folder: bool = False
    check: Callable[[Path], None] | None = field(compare=False, repr=False, default=None)


@dataclass(frozen=True)
class Detected:
    """The result of sniffing one path."""

    path: Path
    format: FileFormat


# The formats in the order they are tried, as "module:attribute" of the module that reads them.
# Order matters where two formats could claim one file: the stricter one comes first (a Studio
# advisor report before a generic trace JSON, a profiler folder before a folder of ranks).
FILE_FORMATS = (
    "studio.tools.graph.om_reader:OM",
    "studio.tools.graph.onnx_reader:ONNX",
    "studio.tools.graph.om_json_reader:OM_JSON",
    "studio.tools.graph.pipeline.to_model:MINDX_PIPELINE",
    "studio.tools.graph.msprobe_modules:MSPROBE_CONSTRUCT",
    "studio.tools.graph.overlay:NODE_DATA",
    "studio.tools.convert.frameworks:TF_PB",
    "studio.tools.convert.frameworks:CAFFE",
    "studio.tools.accuracy.npy_folder:NPY",
    "studio.tools.accuracy.dumpset:NPU_DUMP",
    "studio.tools.advisor.model:ADVISOR_REPORT",
    "studio.tools.infer.runner:INFER_RESULTS",
    "studio.tools.accuracy.msprobe_dump:MSPROBE_DUMP",
    "studio.tools.profiler.ort_reader:ORT_PROFILE",
    "studio.tools.profiler.chrome_reader:CHROME_TRACE",
    "studio.tools.accuracy.acl_config:ACL_JSON",
    "studio.tools.convert.fusion_switch:FUSION_SWITCH",
    "studio.tools.profiler.msprof_reader:PROFILING_CSV",
    "studio.tools.accuracy.report_csv:COMPARE_CSV",
    "studio.tools.accuracy.msprobe_result:MSPROBE_RESULT",
    "studio.tools.convert.aipp:AIPP_CFG",
    "studio.tools.profiler.db_reader:PROFILING_DB",
    "studio.core.workspace:WORKSPACE_FILE",
)
FOLDER_FORMATS = (
    "studio.core.workspace:WORKSPACE_DIR",
    "studio.tools.profiler.msprof_reader:MSPROF_DIR",
    "studio.tools.profiler.msprof_reader:PYTORCH_NPU_DIR",
    "studio.tools.profiler.summary_file:STUDIO_PROFILE",
    "studio.tools.profiler.cluster.engine:CLUSTER_DIR",
    "studio.tools.infer.runner:INFER_DIR",
    "studio.tools.accuracy.msprobe_dump:MSPROBE_DIR",
    "studio.tools.accuracy.dumpset:DUMP_DIR",
)

_loaded: dict[str, list[FileFormat]] = {}


def _formats(kind: str) -> list[FileFormat]:
    if kind not in _loaded:
        names = FILE_FORMATS if kind == "file" else FOLDER_FORMATS
        found = []
        for name in names:
            module, _, attribute = name.partition(":")
            fmt = getattr(importlib.import_module(module), attribute)
            if fmt.folder != (kind == "folder"):
                raise TypeError(f"{name} is registered as a {kind} format but says folder={fmt.folder}")
            found.append(fmt)
        _loaded[kind] = found
    return _loaded[kind]


def known_formats() -> list[FileFormat]:
    """Every registered format, files first."""
    return _formats("file") + _formats("folder")


def detect(path: Path | str) -> Detected:
    """Sniff ``path`` and return its format, or raise a UserError that says why it is not readable."""
    path = Path(path)
    if not path.exists():
        raise UserError("File not found", path, "Check the path; the file may have been moved or deleted.")
    if path.is_dir():
        for fmt in _formats("folder"):
            if fmt.match(path):
                return Detected(path, fmt)
        raise UserError("Folder is not one Studio can open", path,
                        "Open a workspace (with studio.toml), a PROF_* or ASCEND_PROFILER_OUTPUT folder, a folder of "
                        "ranks (*_ascend_pt), or a dump folder.")
    from studio.core.safe_read import open_regular

    try:
        with open_regular(path) as handle:  # a FIFO or a device is refused here, before any reader blocks on it
            head = handle.read(HEAD_BYTES)
    except OSError as exc:
        raise UserError(f"Cannot read file: {exc.strerror}", path, "Check the file's permissions.") from exc
    if not head:
        raise UserError("File is empty", path, "The file may be truncated; produce it again.")
    for fmt in _formats("file"):
        if fmt.match(path, head):
            return Detected(path, fmt)
    raise UserError(_unknown_reason(path, head), path, _unknown_fix(path))


def verify(detected: Detected) -> None:
    """A deeper check than the sniff, for formats whose framing can be walked cheaply.

    The sniff reads 8 KiB, so a model cut short still sniffs as one; ``studio info`` calls this so
    that it never calls a truncated or damaged file valid. Raises UserError saying what is wrong.
    """
    if detected.format.check is not None:
        detected.format.check(detected.path)


def open_job(detected: Detected, cancel: CancelToken | None = None) -> Generator[Progress, None, Any]:
    """Job: read ``detected`` with its format's own reader (whether that reader is a job or not)."""
    fmt = detected.format
    if fmt.open is None:
        raise UserError(f"Studio does not read {fmt.label} files itself", detected.path,
                        f"Open it from the {fmt.panel} panel, which hands it on as it is.")
    result = fmt.open(detected.path, cancel)
    if isinstance(result, Generator):
        result = yield from result
    return result


def _unknown_reason(path: Path, head: bytes) -> str:
    preview = head[:16]
    printable = preview.decode("ascii", "replace") if all(32 <= b < 127 or b in b"\r\n\t" for b in preview) else None
    shown = repr(printable.strip()) if printable else preview.hex(" ")
    expected = _EXPECTED_BY_SUFFIX.get(path.suffix.lower())
    if expected:
        return f"Not a valid {expected}: the content does not match (it starts with {shown})"
    return f"Unknown file format (it starts with {shown})"


def _unknown_fix(path: Path) -> str:
    if path.suffix.lower() == ".om":
        return "An OM model starts with the 'IMOD' magic; convert the model again with atc, or check the copy is complete."
    if path.suffix.lower() == ".db":
        return ("An msprof database starts with 'SQLite format 3'; this one is damaged or incomplete. "
                "Export it again with msprof --export=on --type=db, or open the text export (CSV/JSON).")
    return ("Studio opens ONNX and OM models, Chrome/msprof traces, msprof and PyTorch-NPU CSVs, .npy dumps, "
            "NPU dump files, AIPP configs and acl.json files.")


_EXPECTED_BY_SUFFIX = {
    ".om": "Ascend OM model",
    ".onnx": "ONNX model",
    ".json": "trace or configuration JSON",
    ".npy": "NumPy array",
    ".csv": "profiling or comparison CSV",
    ".cfg": "AIPP configuration",
    ".db": "msprof SQLite database",
    ".pipeline": "MindX SDK pipeline (JSON)",
}


# ---------------------------------------------------------------- helpers the format modules share
def path_only(reader: Callable[[Path], Any]) -> Callable[..., Any]:
    """An ``open`` for a reader that takes the path alone (it cannot be cancelled midway)."""
    def open_path(path: Path, cancel: CancelToken | None = None) -> Any:
        return reader(Path(path))
    open_path.__name__ = open_path.__qualname__ = getattr(reader, "__name__", "open_path")
    open_path.__doc__ = reader.__doc__
    return open_path


def json_text(head: bytes) -> str | None:
    """The head as text when it starts like JSON (an object or array), else None."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text[:1] in (b"{", b"["):
        return None
    return text.decode("utf-8", "replace")


def json_object_with(head: bytes, pattern: str) -> bool:
    """True when the head is a JSON object in which ``pattern`` (a regex) occurs."""
    text = json_text(head)
    return bool(text and text.startswith("{") and re.search(pattern, text))


def csv_header(head: bytes) -> set[str]:
    """The cells of the first line, lower-cased and unquoted."""
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").lstrip("\ufeff")
    return {cell.strip().strip('"').lower() for cell in first.split(",")}
