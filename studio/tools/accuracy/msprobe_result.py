"""Reading an msprobe comparison CSV back into an :class:`~.msprobe_compare.MsprobeComparison`.

Four layouts open, told apart by their header:

* msprobe's ``compare_result_*.csv`` in statistics mode (``NPU Name``, ``Bench Name``, the four
  differences, ``NormRelativeErr`` in percent, ``Result``, ``Err_message``, ``NPU_Stack_Info``) and
  in tensor mode (``Cosine``, ``EucDist``, ... instead of the differences) — the file
  ``studio compare -o result.csv`` writes as ``result.msprobe.csv`` too;
* the 2023 layout (``Cosine``, ``MaxAbsErr``, ``Accuracy Reached or Not``);
* Studio's own msprobe CSV (``Target Name``, ``Golden Name``, ``NormRelativeErr`` as a fraction,
  ``Result``, ``Message``).

``NPU`` is the target side, ``Bench`` the golden one. A row whose golden side is ``N/A`` (an
argument with no counterpart) is not a comparison: its call is listed as target-only. The verdicts
are the file's own; nothing is judged again. The dumps themselves are not needed (the module tree
is then empty).
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import ACCURACY, FileFormat, csv_header, path_only
from studio.core.units import parse_number
from studio.tools.accuracy.msprobe_compare import PASS, MsprobeComparison, TensorRow
from studio.tools.accuracy.msprobe_dump import STAT_KEYS, ApiCall, MsprobeDump
from studio.tools.accuracy.msprobe_metrics import COLUMNS as TENSOR_COLUMNS

# the call and the argument of a slot name: msprobe's dots, or the 2023 layout's underscores
# (``Module.bn1.BatchNorm2d.forward.0`` counts after ``forward``, ``Functional.conv2d.0.forward`` before it)
_SLOT = r"(?:input|output|parameters)(?:\..+)?"
_SPLIT = (re.compile(rf"^(.+?\.(?:forward|backward)(?:\.\d+)?)\.({_SLOT})$"),
          re.compile(r"^(.+?\.parameters_grad)\.(.+)$"),
          re.compile(rf"^(.+?_(?:forward|backward))_({_SLOT})$"))
_MSPROBE_DIFFS = {"Max": "Max diff", "Min": "Min diff", "Mean": "Mean diff", "Norm": "L2norm diff"}
_STUDIO_DIFFS = {key: f"{key} diff" for key in STAT_KEYS}
_LEGACY_RESULT = {"yes": PASS, "no": "error", "warning": "warning"}


def match_msprobe_result(path: Path, head: bytes) -> bool:
    """An msprobe comparison CSV: msprobe's NPU/Bench names, or Studio's Target/Golden names and Result."""
    cells = csv_header(head)
    return {"npu name", "bench name"} <= cells or {"target name", "golden name", "result"} <= cells


def read_msprobe_result(path: Path | str) -> MsprobeComparison:
    """Read an msprobe comparison CSV (see the module docstring)."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            table = list(csv.DictReader(handle))
            header = list(table[0].keys()) if table else []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"Cannot read the msprobe comparison CSV ({exc})", path, "Check the file.") from exc
    if not header:
        raise UserError("The msprobe comparison CSV holds no rows", path, "Compare again and open the new file.")
    studio = "Target Name" in header
    tensor = "Cosine" in header
    rows, target_calls, golden_calls, unmatched = [], {}, {}, []
    for line, cells in enumerate(table, start=2):
        target_name = (cells.get("Target Name") if studio else cells.get("NPU Name")) or ""
        golden_name = (cells.get("Golden Name") if studio else cells.get("Bench Name")) or ""
        if not target_name:
            raise UserError("A row has no target name", f"{path}, line {line}", "The CSV is damaged; compare again.")
        t_api, slot = _split(target_name)
        stack = _stack(cells.get("NPU_Stack_Info"))
        call = target_calls.setdefault(t_api, ApiCall(t_api, len(target_calls), [], stack=stack))
        if stack and not call.stack:
            call.stack = stack
        if golden_name in ("", "N/A"):
            unmatched.append(t_api)
            continue
        g_api, _ = _split(golden_name)
        golden_calls.setdefault(g_api, ApiCall(g_api, len(golden_calls), []))
        rows.append(_row(cells, t_api, g_api, slot, studio, tensor, header))
    task = "tensor" if tensor else "statistics"
    golden = MsprobeDump(path, task, "", "", list(golden_calls.values()), {})
    target = MsprobeDump(path, task, "", "", list(target_calls.values()), {})
    paired = {r.target_api: r.golden_api for r in rows}
    pairs = [(golden_calls[g], target_calls[t]) for t, g in paired.items()]
    only_target = [name for name in dict.fromkeys(unmatched) if name not in paired]
    return MsprobeComparison(golden, target, rows, pairs, [], only_target)


def _split(name: str) -> tuple[str, str]:
    for pattern in _SPLIT:
        found = pattern.match(name)
        if found:
            return found.group(1), found.group(2)
    return name, ""


def _row(cells: dict, t_api: str, g_api: str, slot: str, studio: bool, tensor: bool, header: list) -> TensorRow:
    side = ("Target", "Golden") if studio else ("NPU", "Bench")
    dtype = " Dtype" if f"{side[0]} Dtype" in header else " Tensor Dtype"
    shape = " Shape" if studio else " Tensor Shape"
    diffs = {key: _float(cells.get(column)) for key, column in (_STUDIO_DIFFS if studio else _MSPROBE_DIFFS).items()}
    relative = _float(cells.get("NormRelativeErr"))
    if not studio and relative is not None:
        relative /= 100  # msprobe writes percent
    result, messages = _verdict(cells, studio)
    metrics = None
    if tensor:
        metrics = {c: _tensor_cell(cells.get(c)) for c in TENSOR_COLUMNS if c in header}
    return TensorRow(g_api, t_api, slot, cells.get(side[1] + dtype) or "", cells.get(side[0] + dtype) or "",
                     _shape(cells.get(side[1] + shape)), _shape(cells.get(side[0] + shape)), diffs, relative,
                     result=result, messages=messages, is_output=slot == "output" or slot.startswith("output."),
                     tensor=metrics)


def _verdict(cells: dict, studio: bool) -> tuple[str, list[str]]:
    """The row's verdict and reasons as the file states them."""
    if "Accuracy Reached or Not" in cells:  # the 2023 layout
        result = _LEGACY_RESULT.get((cells.get("Accuracy Reached or Not") or "").strip().lower(), PASS)
    else:
        result = (cells.get("Result") or PASS).strip().lower()
    if result not in (PASS, "warning", "error"):
        result = PASS if result in ("", "n/a") else "error"
    text = (cells.get("Message") if studio else cells.get("Err_message")) or ""
    if studio:
        return result, [m for m in text.split("; ") if m]
    try:
        messages = json.loads(text) if text.startswith("[") else ([text] if text else [])
    except ValueError:
        messages = [text]
    return result, [str(m) for m in messages if m]


def _float(text) -> float | None:
    """A number cell (``12.5%`` read as 12.5; ``inf`` as infinity); None where it holds no number."""
    if text is None:
        return None
    text = str(text).strip().rstrip("%")
    if text.lower() in ("inf", "+inf", "-inf", "nan"):
        return float(text)
    value = parse_number(text)
    if value is None:
        return None
    try:
        return float(value)
    except OverflowError:  # an integer too long for a float
        return math.inf if value > 0 else -math.inf


def _tensor_cell(text) -> float | str:
    value = _float(text)
    return value if value is not None and not math.isnan(value) else (str(text or "N/A").strip() or "N/A")


def _shape(text) -> list | None:
    if not text or text.strip() == "N/A":
        return None
    return [int(v) for v in re.findall(r"-?\d+", text)]


def _stack(text) -> list[str]:
    """The stack cell: msprobe writes a Python list's text; one frame per item."""
    if not text or text.strip() in ("N/A", "[]"):
        return []
    frames = re.findall(r"'((?:[^'\\]|\\.)*)'", text)
    return frames or [text]


MSPROBE_RESULT = FileFormat("msprobe_result", "msprobe comparison CSV (msprobe's compare_result or Studio's)",
                            ACCURACY, match_msprobe_result, path_only(read_msprobe_result))
