"""CSV files of an msprobe comparison: Studio's own, and one laid out as ``msprobe compare`` writes its result.

The msprobe-compatible file has msprobe's columns in msprobe's order (mindstudio-probe 26.2):
the names, dtypes, shapes and ``requires_grad`` of both sides (``NPU`` is the target, ``Bench``
the golden side), then in statistics mode the four differences and four relative errors (in
percent; ``inf`` where the golden value is 0, ``0`` where both values are the same text, as for
scalar, bool and ``None`` arguments) or in tensor mode the six metrics, then both sides'
max/min/mean/l2norm, ``Requires_grad Consistent``, ``Result``, ``Err_message`` (a JSON list),
``NPU_Stack_Info`` (on each call's first argument) and, in tensor mode, ``Data_name``. Cells
msprobe writes as ``N/A`` (a ``None`` argument's dtype, shape and statistics side) are ``N/A``
here too; no cell is left empty. The reasons in ``Err_message`` are Studio's wording.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.accuracy.msprobe_dump import STAT_KEYS
from studio.tools.accuracy.msprobe_metrics import COLUMNS as TENSOR_COLUMNS

BASIC = ("NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
         "NPU Requires_grad", "Bench Requires_grad")
STATISTICS = ("Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr", "MinRelativeErr",
              "MeanRelativeErr", "NormRelativeErr")
SUMMARY = ("NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm")
EXTRA = ("Requires_grad Consistent", "Result", "Err_message", "NPU_Stack_Info")


def msprobe_header(tensor_mode: bool) -> list[str]:
    """msprobe's result columns for the mode (statistics: 28, tensor: 27)."""
    middle = TENSOR_COLUMNS if tensor_mode else STATISTICS
    return [*BASIC, *middle, *SUMMARY, *EXTRA, *(("Data_name",) if tensor_mode else ())]


def write_msprobe_csv(result, path: Path) -> None:
    """The comparison as ``msprobe compare`` lays out its ``compare_result_*.csv`` (see the module docstring):
    every target argument in the target's call order, those without a golden counterpart with ``N/A``
    on the golden side, as msprobe writes them."""
    tensor_mode = result.tensor_mode
    rows = {(r.target_api, r.slot): r for r in result.rows}
    with _open(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")  # as pandas writes msprobe's
        writer.writerow(msprobe_header(tensor_mode))
        for call in result.target.calls:
            for index, stat in enumerate(call.tensors):
                slot = stat.slot[len(call.name) + 1:] if stat.slot.startswith(call.name + ".") else stat.slot
                stack = str(call.stack) if index == 0 and call.stack else "N/A"
                row = rows.get((call.name, slot))
                cells = _matched(row, tensor_mode) if row is not None else _unmatched(stat, tensor_mode)
                if tensor_mode:  # Data_name comes after the stack
                    writer.writerow([f"{call.name}.{slot}", *cells[:-1], stack, cells[-1]])
                else:
                    writer.writerow([f"{call.name}.{slot}", *cells, stack])


def _matched(row, tensor_mode: bool) -> list[str]:
    """The cells after the name and before the stack (tensor mode: Data_name last)."""
    g, t = row.golden, row.target
    g_stats, t_stats = [_stat(g, k) for k in STAT_KEYS], [_stat(t, k) for k in STAT_KEYS]
    t_grad, g_grad = _grad(t), _grad(g)
    if tensor_mode:
        middle = [_cell(row.tensor.get(c)) if row.tensor else "unsupported" for c in TENSOR_COLUMNS]
    else:
        pairs = [_stat_diff(a, b) for a, b in zip(t_stats, g_stats)]
        middle = [d for d, _ in pairs] + [r for _, r in pairs]
    return [f"{row.golden_api}.{row.slot}", _dtype(t), _dtype(g), _shape(t), _shape(g), t_grad, g_grad, *middle,
            *t_stats, *g_stats, str(t_grad == g_grad), row.result, json.dumps(row.messages),
            *((str([_data_name(t), _data_name(g)]),) if tensor_mode else ())]


def _unmatched(stat, tensor_mode: bool) -> list[str]:
    """A target argument with no golden counterpart: msprobe's N/A row (never judged: pass)."""
    middle = ["N/A"] * (len(TENSOR_COLUMNS) if tensor_mode else len(STATISTICS))
    return ["N/A", _dtype(stat), "N/A", _shape(stat), "N/A", _grad(stat), "N/A", *middle,
            *(_stat(stat, k) for k in STAT_KEYS), *(["N/A"] * 4), "False", "pass", "[]",
            *((str([_data_name(stat), "-1"]),) if tensor_mode else ())]


def write_studio_csv(result, path: Path) -> None:
    """Studio's own CSV: one row per argument with both names, the differences, tensor metrics and the verdict."""
    tensor_mode = result.tensor_mode
    with _open(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["Target Name", "Golden Name", "Target Dtype", "Golden Dtype", "Target Shape", "Golden Shape",
                         *(f"{k} diff" for k in STAT_KEYS), "NormRelativeErr",
                         *(TENSOR_COLUMNS if tensor_mode else ()), "Result", "Message"])
        for row in result.rows:
            metrics = [row.tensor.get(c) if row.tensor else None for c in TENSOR_COLUMNS] if tensor_mode else []
            writer.writerow([f"{row.target_api}.{row.slot}", f"{row.golden_api}.{row.slot}", row.target_dtype,
                             row.golden_dtype, row.target_shape, row.golden_shape,
                             *(row.diffs.get(k) for k in STAT_KEYS), row.norm_relative, *metrics, row.result,
                             row.message])


def msprobe_csv_path(studio_csv: Path) -> Path:
    """Where the msprobe-compatible CSV goes beside Studio's: ``result.csv`` -> ``result.msprobe.csv``."""
    return studio_csv.with_name(studio_csv.stem + ".msprobe.csv")


def _open(path: Path):
    try:
        return open(path, "w", newline="", encoding="utf-8")
    except OSError as exc:
        raise UserError(f"Cannot write the CSV ({exc.strerror})", path, "Choose a folder you can write to.") from exc


def _value(stat, key: str):
    """A statistic as dump.json holds it (msprobe prints what it read): float, int, bool, str or None."""
    if stat is None or stat.dtype == "N/A":
        return None
    if stat.scalar:
        return stat.value
    return stat.raw.get(key) if stat.raw is not None else stat.stats.get(key)


def _stat(stat, key: str) -> str:
    if stat is None or stat.dtype == "N/A":
        return "None"
    return _cell(_value(stat, key))


def _cell(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, float) and math.isnan(value):
        return "Nan"
    if isinstance(value, float) and math.isinf(value):  # msprobe writes " inf" so that Excel reads it as text
        return " inf" if value > 0 else " -inf"
    return str(value)


def _number(text: str):
    """The number msprobe sees in a statistic's text (bools are not numbers), or None."""
    from studio.core.units import parse_number

    return None if text in ("True", "False") else parse_number(text)


def _stat_diff(npu: str, bench: str) -> tuple[str, str]:
    """msprobe's difference and relative error (percent) of one statistic, from both sides' text."""
    if npu == bench:
        return "0", "0"
    kinds = [_kind(v) for v in (npu, bench)]
    if "nan" in kinds and "na" not in kinds and "other" not in kinds:
        return "Nan", "Nan"
    if "na" in kinds:
        return "N/A", "N/A"
    if "other" in kinds:
        return "Diff", "Diff"
    if kinds[0] in ("inf", "-inf"):
        return kinds[0], kinds[0]
    if kinds[1] in ("inf", "-inf"):
        flipped = "-inf" if kinds[1] == "inf" else "inf"
        return flipped, flipped
    # msprobe's column of numbers is float64 as soon as one is not an integer: floats throughout
    a, b = float(_number(npu)), float(_number(bench))
    diff = a - b
    relative = "inf" if b == 0 else f"{abs(diff / b * 100)!r}%"
    return repr(diff), relative


def _kind(text: str) -> str:
    low = text.lower()
    if low == "nan":  # msprobe reads "None" as text, not as a missing number
        return "nan"
    if low in ("inf", "-inf"):
        return low
    if _number(text) is not None:
        return "num"
    if text == "N/A":
        return "na"
    return "other"


def _dtype(stat) -> str:
    return "N/A" if stat is None or stat.dtype == "N/A" else stat.dtype


def _shape(stat) -> str:
    if stat is None or stat.shape is None:
        return "N/A"
    return str(list(stat.shape))


def _grad(stat) -> str:
    return "N/A" if stat is None or stat.requires_grad is None else str(stat.requires_grad)


def _data_name(stat) -> str:
    return stat.data_name if stat is not None and stat.data_name else "-1"
