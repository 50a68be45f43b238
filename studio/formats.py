"""Which kind of file is this, and which panel reads it?

Detection looks at magic bytes and content first and uses the extension only as a tie-breaker
(a ``.om`` that lacks the ``IMOD`` magic is refused, a trace saved as ``.txt`` is still a trace).
Each format has a cheap ``sniff`` over the first few KiB; the full readers live in the tools.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from studio.errors import UserError

HEAD_BYTES = 8192

# Panel names (the main window maps them to docks).
GRAPH, PROFILER, ACCURACY, CONVERT, WORKSPACE = "graph", "profiler", "accuracy", "convert", "workspace"
ADVISOR = "advisor"
GALLERY = "gallery"
CLUSTER = "cluster"


@dataclass(frozen=True)
class FileFormat:
    """A format Studio recognises and the panel that opens it."""

    id: str
    label: str
    panel: str


@dataclass(frozen=True)
class Detected:
    """The result of sniffing one path."""

    path: Path
    format: FileFormat


Sniffer = Callable[[Path, bytes], bool]
_FILE_SNIFFERS: list[tuple[FileFormat, Sniffer]] = []
_DIR_SNIFFERS: list[tuple[FileFormat, Callable[[Path], bool]]] = []


def file_format(id: str, label: str, panel: str):
    """Register a file sniffer: ``@file_format("onnx", "ONNX model", GRAPH)``."""
    def register(func: Sniffer) -> Sniffer:
        _FILE_SNIFFERS.append((FileFormat(id, label, panel), func))
        return func
    return register


def folder_format(id: str, label: str, panel: str):
    """Register a folder sniffer (PROF_ directories, dump folders, workspaces)."""
    def register(func: Callable[[Path], bool]) -> Callable[[Path], bool]:
        _DIR_SNIFFERS.append((FileFormat(id, label, panel), func))
        return func
    return register


def known_formats() -> list[FileFormat]:
    """Every registered format, files first."""
    return [f for f, _ in _FILE_SNIFFERS] + [f for f, _ in _DIR_SNIFFERS]


def detect(path: Path | str) -> Detected:
    """Sniff ``path`` and return its format, or raise a UserError that says why it is not readable."""
    path = Path(path)
    if not path.exists():
        raise UserError("File not found", path, "Check the path; the file may have been moved or deleted.")
    if path.is_dir():
        for fmt, sniff in _DIR_SNIFFERS:
            if sniff(path):
                return Detected(path, fmt)
        raise UserError("Folder is not one Studio can open", path,
                        "Open a workspace (with studio.toml), a PROF_* or ASCEND_PROFILER_OUTPUT folder, a folder of "
                        "ranks (*_ascend_pt), or a dump folder.")
    try:
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError as exc:
        raise UserError(f"Cannot read file: {exc.strerror}", path, "Check the file's permissions.") from exc
    if not head:
        raise UserError("File is empty", path, "The file may be truncated; produce it again.")
    for fmt, sniff in _FILE_SNIFFERS:
        if sniff(path, head):
            return Detected(path, fmt)
    raise UserError(_unknown_reason(path, head), path, _unknown_fix(path))


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


# ---------------------------------------------------------------- models
@file_format("om", "Ascend OM model", GRAPH)
def _sniff_om(path: Path, head: bytes) -> bool:
    return head[:4] in (b"IMOD", b"PICO")


# ModelProto fields and their protobuf wire types (0 varint, 2 length-delimited).
_ONNX_MODEL_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}


@file_format("onnx", "ONNX model", GRAPH)
def _sniff_onnx(path: Path, head: bytes) -> bool:
    """Walk the first protobuf fields: an ONNX model starts with known ModelProto tags."""
    pos, seen_ir = 0, False
    for _ in range(16):
        if pos >= len(head):
            break
        tag, pos = _varint(head, pos)
        if tag is None:
            return False
        number, wire = tag >> 3, tag & 7
        if _ONNX_MODEL_FIELDS.get(number) != wire:
            return False
        value, pos = _varint(head, pos)
        if value is None:
            return False
        if number == 1:
            seen_ir = 1 <= value <= 64
        if wire == 2:
            if pos + value > len(head):  # a big field (the graph) runs past the head: good enough
                break
            pos += value
    return seen_ir


def verify(detected: Detected) -> None:
    """A deeper check than the sniff, for formats whose framing can be walked cheaply.

    The sniff reads 8 KiB, so a model cut short still sniffs as one; ``studio info`` calls this so
    that it never calls a truncated or damaged file valid. Raises UserError saying what is wrong.
    """
    if detected.format.id == "onnx":
        _verify_onnx(detected.path)


_GRAPH_FIELDS = {1: 2, 2: 2, 5: 2, 10: 2, 11: 2, 12: 2, 13: 2, 14: 2, 15: 2, 16: 2}
_FIELD_NAMES = {7: "graph", 8: "opset_import", 14: "metadata_props", 25: "training_info", 26: "functions"}


def _verify_onnx(path: Path) -> None:
    """Walk the protobuf framing of the ModelProto and of its graph: every field must fit the file."""
    import mmap

    size = path.stat().st_size
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        graph = _walk(data, 0, size, _ONNX_MODEL_FIELDS, path, "the model")
        if graph is None:
            raise UserError("Not a valid ONNX model: it holds no graph", path,
                            "The file may be truncated or not a model; export it again.")
        start, end = graph
        _walk(data, start, end, _GRAPH_FIELDS, path, "the graph")


def _walk(data, pos: int, end: int, fields: dict[int, int], path: Path, what: str) -> tuple[int, int] | None:
    """Check every field from ``pos`` to ``end``; return the span of field 7 (the graph) if any."""
    graph = None
    while pos < end:
        start = pos
        tag, pos = _varint(data[pos:pos + 10], 0)
        pos += start
        if tag is None:
            raise _damaged(path, what, start, "a field tag is cut off")
        number, wire = tag >> 3, tag & 7
        if fields.get(number, wire) != wire or wire not in (0, 1, 2, 5):
            raise _damaged(path, what, start, f"field {number} has wire type {wire}")
        if wire == 0:
            value, used = _varint(data[pos:pos + 10], 0)
            if value is None:
                raise _damaged(path, what, start, "a number is cut off")
            pos += used
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            length, used = _varint(data[pos:pos + 10], 0)
            if length is None:
                raise _damaged(path, what, start, "a length is cut off")
            pos += used
            if pos + length > end:
                name = _FIELD_NAMES.get(number, f"field {number}") if what == "the model" else f"field {number}"
                raise UserError(
                    f"Truncated ONNX model: {what}'s {name} needs {pos + length - end:,} more bytes "
                    f"than the file holds ({len(data):,} bytes)", path,
                    "The copy is incomplete; download or export the model again.")
            if number == 7 and what == "the model":
                graph = (pos, pos + length)
            pos += length
        if pos > end:
            raise _damaged(path, what, start, "the last field runs past the end")
    return graph


def _damaged(path: Path, what: str, offset: int, why: str) -> UserError:
    return UserError(f"Damaged ONNX model: {why} in {what} at byte {offset:,}", path,
                     "The file is corrupt or not an ONNX model; export or copy it again.")


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
    result = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    return None, pos


@file_format("om_json", "OM model as JSON (atc --mode=1)", GRAPH)
def _sniff_om_json(path: Path, head: bytes) -> bool:
    """ModelDef JSON: a top-level object with ``graph`` lists of ``op`` lists, or ATC model attributes."""
    text = _json_text(head)
    return bool(text and text.startswith("{") and (
        re.search(r'"graph"\s*:\s*\[', text) and re.search(r'"op"\s*:\s*\[', text)
        or re.search(r'"key"\s*:\s*"(atc_cmdline|om_info_list|soc_version)"', text)))


@file_format("mindx_pipeline", "MindX SDK pipeline", GRAPH)
def _sniff_mindx_pipeline(path: Path, head: bytes) -> bool:
    """A stream JSON: an object of streams whose elements have a ``factory`` (``.pipeline`` files)."""
    text = _json_text(head)
    if not text or not text.startswith("{"):
        return False
    has_factory = re.search(r'"factory"\s*:\s*"', text) is not None
    return has_factory and (path.suffix.lower() == ".pipeline" or '"stream_config"' in text
                            or re.search(r'"next"\s*:', text) is not None)


@file_format("node_data", "Node data overlay (Model Explorer JSON)", GRAPH)
def _sniff_node_data(path: Path, head: bytes) -> bool:
    """``{"name": ..., "results": {"node": {"value": ...}}}``, or the same keyed by graph id."""
    text = _json_text(head)
    return bool(text and text.startswith("{") and re.search(r'"results"\s*:\s*\{', text)
                and re.search(r'"value"\s*:', text) and '"traceEvents"' not in text)


@file_format("tf_pb", "TensorFlow frozen graph", CONVERT)
def _sniff_tf(path: Path, head: bytes) -> bool:
    # GraphDef starts with repeated NodeDef (field 1, length-delimited), whose first field is its name.
    return path.suffix.lower() == ".pb" and head[:1] == b"\x0a"


@file_format("caffe", "Caffe model", CONVERT)
def _sniff_caffe(path: Path, head: bytes) -> bool:
    if path.suffix.lower() == ".caffemodel":
        return True
    return path.suffix.lower() == ".prototxt" and bool(re.search(rb"\blayers?\s*\{", head))


# ---------------------------------------------------------------- arrays and dumps
@file_format("npy", "NumPy array", ACCURACY)
def _sniff_npy(path: Path, head: bytes) -> bool:
    return head.startswith(b"\x93NUMPY")


_DUMP_NAME = re.compile(r"^[^.]+(\.[^.]+)+\.\d+\.\d+\.\d{13,17}$")


@file_format("npu_dump", "Ascend NPU dump file", ACCURACY)
def _sniff_npu_dump(path: Path, head: bytes) -> bool:
    """``{op_type}.{op_name}.{task}.{stream}.{timestamp}``: a uint64 header length, then protobuf."""
    if not _DUMP_NAME.match(path.name) or len(head) < 9:
        return False
    header_len = int.from_bytes(head[:8], "little")
    return 0 < header_len < path.stat().st_size


# ---------------------------------------------------------------- JSON
def _json_text(head: bytes) -> str | None:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text[:1] in (b"{", b"["):
        return None
    return text.decode("utf-8", "replace")


@file_format("advisor_report", "Advisor report (studio advise -o report.json)", ADVISOR)
def _sniff_advisor_report(path: Path, head: bytes) -> bool:
    text = _json_text(head)
    return bool(text and text.startswith("{") and re.search(r'"format"\s*:\s*"studio-advisor-report"', text))


@file_format("infer_results", "Results of studio infer (pictures, answers, metrics)", GALLERY)
def _sniff_infer_results(path: Path, head: bytes) -> bool:
    text = _json_text(head)
    return bool(text and text.startswith("{") and re.search(r'"format"\s*:\s*"studio-infer"', text))


@file_format("msprobe_dump", "msprobe dump (dump.json of a PyTorch or MindSpore run)", ACCURACY)
def _sniff_msprobe_dump(path: Path, head: bytes) -> bool:
    text = _json_text(head)
    return bool(text and text.startswith("{") and re.search(r'"task"\s*:\s*"(statistics|md5|tensor)"', text)
                and '"framework"' in text)


@file_format("ort_profile", "ONNX Runtime profile", PROFILER)
def _sniff_ort_profile(path: Path, head: bytes) -> bool:
    text = _json_text(head)
    return bool(text and text.startswith("[") and '"cat"' in text and re.search(r'"cat"\s*:\s*"(Session|Node)"', text))


@file_format("chrome_trace", "Chrome trace (msprof / PyTorch timeline)", PROFILER)
def _sniff_chrome_trace(path: Path, head: bytes) -> bool:
    text = _json_text(head)
    if not text:
        return False
    if text.startswith("{"):
        return '"traceEvents"' in text
    return bool(re.search(r'"ph"\s*:\s*"[A-Za-z]"', text))


@file_format("acl_json", "acl.json (dump / profiling configuration)", ACCURACY)
def _sniff_acl_json(path: Path, head: bytes) -> bool:
    text = _json_text(head)
    return bool(text and text.startswith("{") and re.search(r'"(dump|dump_path|dump_list)"\s*:', text))


_FUSION_SWITCH_LINE = re.compile(rb"^[A-Za-z0-9_.\-]*(Fusion|Pass)[A-Za-z0-9_.\-]*\s*:\s*(on|off)\s*$", re.IGNORECASE)


@file_format("fusion_switch", "ATC fusion switch file", CONVERT)
def _sniff_fusion_switch(path: Path, head: bytes) -> bool:
    text = _json_text(head)
    if text is not None:
        return bool(re.search(r'"(GraphFusion|UBFusion)"\s*:', text))
    # The plain syntax: "ConvBatchnormFusionPass:off" lines, '#' comments.
    lines = [line.split(b"#", 1)[0].strip() for line in head.removeprefix(b"\xef\xbb\xbf").splitlines()[:64]]
    lines = [line for line in lines if line]
    return bool(lines) and all(_FUSION_SWITCH_LINE.match(line) for line in lines)


# ---------------------------------------------------------------- text
_CSV_SIGNATURES = [  # (required header cells, ...) per msprof / PyTorch-NPU / msaccucmp CSV
    ("profiler", {"op name", "op type"}),
    ("profiler", {"name", "type", "accelerator core"}),
    ("profiler", {"op type", "core type", "count"}),
    ("profiler", {"api name", "count"}),
    ("profiler", {"kernel_name", "task_time(us)"}),
    ("profiler", {"step", "computing"}),
    ("profiler", {"category", "event_type", "message"}),
    ("accuracy", {"cosinesimilarity"}),
]


def _csv_header(head: bytes) -> set[str]:
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").lstrip("\ufeff")
    return {cell.strip().strip('"').lower() for cell in first.split(",")}


@file_format("profiling_csv", "Profiling summary CSV (msprof / PyTorch-NPU)", PROFILER)
def _sniff_profiling_csv(path: Path, head: bytes) -> bool:
    cells = _csv_header(head)
    return any(panel == "profiler" and need <= cells for panel, need in _CSV_SIGNATURES)


@file_format("compare_csv", "Accuracy comparison CSV", ACCURACY)
def _sniff_compare_csv(path: Path, head: bytes) -> bool:
    cells = _csv_header(head)
    return any(panel == "accuracy" and need <= cells for panel, need in _CSV_SIGNATURES)


@file_format("aipp_cfg", "AIPP configuration", CONVERT)
def _sniff_aipp(path: Path, head: bytes) -> bool:
    return bool(re.search(rb"^\s*aipp_op\s*\{", head, re.MULTILINE))


@file_format("profiling_db", "msprof SQLite database", PROFILER)
def _sniff_profiling_db(path: Path, head: bytes) -> bool:
    return head.startswith(b"SQLite format 3\x00") and path.name.startswith(("msprof", "ascend_pytorch_profiler"))


@file_format("workspace_file", "Studio workspace", WORKSPACE)
def _sniff_workspace_file(path: Path, head: bytes) -> bool:
    return path.name == "studio.toml"


# ---------------------------------------------------------------- folders
@folder_format("workspace", "Studio workspace", WORKSPACE)
def _sniff_workspace_dir(path: Path) -> bool:
    return (path / "studio.toml").is_file()


@folder_format("msprof_dir", "msprof PROF_ folder", PROFILER)
def _sniff_prof_dir(path: Path) -> bool:
    if path.name.startswith("PROF_"):
        return True
    if (path / "mindstudio_profiler_output").is_dir() or any(path.glob("device_[0-9]*/summary")):
        return True
    # a folder of loose msprof exports (a database, summary CSVs, a timeline) copied together
    if (path / "studio_profile.json").is_file():
        return False  # `studio profile run` writes msprof-style CSVs too
    return any(path.glob("msprof*.db")) or any(path.glob("msprof*.json")) or any(path.glob("op_summary*.csv"))


@folder_format("pytorch_npu_dir", "PyTorch-NPU profiler output", PROFILER)
def _sniff_pytorch_npu_dir(path: Path) -> bool:
    if path.name == "ASCEND_PROFILER_OUTPUT" or (path / "ASCEND_PROFILER_OUTPUT").is_dir():
        return True
    return (path / "trace_view.json").is_file() and (path / "kernel_details.csv").is_file()


@folder_format("studio_profile", "Studio local profile (ONNX Runtime run)", PROFILER)
def _sniff_studio_profile(path: Path) -> bool:
    """A folder written by ``studio profile run``: a trace, summaries and studio_profile.json."""
    return (path / "studio_profile.json").is_file()


_CLUSTER_OUTPUT_FILES = ("cluster_step_trace_time.csv", "cluster_analysis.db")
_PROF_DEVICE = re.compile(r"^device_\d+$")


@folder_format("cluster_dir", "Multi-rank profile (ranks side by side)", CLUSTER)
def _sniff_cluster_dir(path: Path) -> bool:
    """A folder holding 2+ ranks (``*_ascend_pt`` folders, ``PROF_*/device_N`` folders) within 3
    levels, or msprof-analyze's ``cluster_analysis_output``. Registered after the profiler's folder
    formats, and a rank folder itself is never taken: what the profiler opens stays its own."""
    name = path.name
    if name.endswith("_ascend_pt") or name.startswith("PROF_") or name == "ASCEND_PROFILER_OUTPUT":
        return False
    if name == "cluster_analysis_output" or any((path / f).is_file() for f in _CLUSTER_OUTPUT_FILES):
        return True
    ranks, budget, level = 0, 400, [path]
    for _depth in range(3):  # the engine looks deeper; the sniff stays a few hundred entries at most
        below = []
        for folder in level:
            try:
                children = [c for c in list(folder.iterdir())[:budget] if c.is_dir()]
            except OSError:
                continue
            budget -= len(children)
            for child in children:
                if child.name == "cluster_analysis_output":
                    return True
                if child.name.endswith("_ascend_pt"):
                    ranks += 1
                elif child.name.startswith("PROF_"):
                    ranks += _prof_devices(child)
                else:
                    below.append(child)
            if ranks >= 2:
                return True
            if budget <= 0:
                return False
        level = below
    return False


def _prof_devices(prof: Path) -> int:
    try:
        return sum(1 for c in prof.iterdir() if _PROF_DEVICE.match(c.name) and c.is_dir())
    except OSError:
        return 0


@folder_format("infer_dir", "Results of studio infer", GALLERY)
def _sniff_infer_dir(path: Path) -> bool:
    results = path / "results.json"
    if not results.is_file():
        return False
    try:
        with results.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return False
    return b'"studio-infer"' in head


@folder_format("msprobe_dir", "msprobe dump folder (dump.json, stack.json, construct.json)", ACCURACY)
def _sniff_msprobe_dir(path: Path) -> bool:
    dump = path / "dump.json"
    if not dump.is_file():
        return False
    try:
        with dump.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return b'"task"' in head and b'"framework"' in head


@folder_format("dump_dir", "Tensor dump folder", ACCURACY)
def _sniff_dump_dir(path: Path) -> bool:
    # A dump folder holds .npy files or NPU dump files (or a `studio dump` manifest). NPU dumps
    # nest them as {dump_path}/{time}/{device}/{model}/{model_id}/{index}/: look 6 levels deep,
    # through at most a few hundred entries, so sniffing stays cheap.
    if (path / "manifest.json").is_file():
        return True
    budget = 400
    level = [path]
    for _depth in range(7):
        below = []
        for folder in level:
            try:
                children = list(folder.iterdir())[:budget]
            except OSError:
                continue
            budget -= len(children)
            for child in children:
                if child.suffix == ".npy" or _DUMP_NAME.match(child.name):
                    return True
                if child.is_dir():
                    below.append(child)
            if budget <= 0:
                return False
        level = below
    return False
