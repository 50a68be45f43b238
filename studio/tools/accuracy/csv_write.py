"""The comparison CSV: msaccucmp's columns, plus what Studio needs to open the result again
(read back by :mod:`.report_csv`).

Columns, in msaccucmp's order (``NPUDump`` = target op, ``GroundTruth`` = golden op, ``*`` marks
a one-side-only op, the two ``DataType`` columns are target then golden)::

    Index, OpType, NPUDump, DataType, GroundTruth, DataType, TensorIndex, Shape, OverFlow,
    CosineSimilarity, MaxAbsoluteError, AccumulatedRelativeError, RelativeEuclideanDistance,
    KullbackLeiblerDivergence, StandardDeviation, MeanAbsoluteError, RootMeanSquareError,
    MaxRelativeError, MeanRelativeError, CompareFailReason, IsNpuOps, IsOutputNode, IsPrecisionError

then Studio's: ``GoldenShape, Status, IsInput, GoldenFile, TargetFile, GoldenMode, TargetMode``
(files are written as absolute tensor locators, so a drill-down works from the CSV alone; a
relative one, from an older table or one edited by hand, is read relative to the CSV's folder).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from studio.tools.accuracy.advisor import overflows
from studio.tools.accuracy.tensors import DTYPE_AS_RUN_MODES, FP16_MODES

COLUMNS = ["Index", "OpType", "NPUDump", "DataType", "GroundTruth", "DataType", "TensorIndex", "Shape",
           "OverFlow", "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError",
           "RelativeEuclideanDistance", "KullbackLeiblerDivergence", "StandardDeviation",
           "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError", "MeanRelativeError",
           "CompareFailReason", "IsNpuOps", "IsOutputNode", "IsPrecisionError",
           "GoldenShape", "Status", "IsInput", "GoldenFile", "TargetFile", "GoldenMode", "TargetMode",
           "TargetNonFinite", "GoldenNonFinite", "TargetAbsMax", "GoldenAbsMax",
           "TargetOnlyNonFinite", "FinitePairs", "RelErrNearZero", "Underflow", "AttentionMask"]
METRIC_COLUMNS = {"CosineSimilarity": "cosine", "MaxAbsoluteError": "max_abs_err",
                  "AccumulatedRelativeError": "acc_rel_err", "RelativeEuclideanDistance": "rel_euclidean",
                  "KullbackLeiblerDivergence": "kl_div", "MeanAbsoluteError": "mean_abs_err",
                  "RootMeanSquareError": "rmse", "MaxRelativeError": "max_rel_err",
                  "MeanRelativeError": "mean_rel_err"}


def _num(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return repr(float(value)) if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def write_csv(result, path: Path) -> Path:
    """Write ``result`` (a CompareResult) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fp16 = result.target_mode in FP16_MODES
    as_run = result.target_mode in DTYPE_AS_RUN_MODES
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(COLUMNS)
        for r in result.rows:
            m, g, t = r.metrics, r.golden, r.target
            cells = [r.index, r.op_type, t.op_name if t else "*", t.dtype if t else "",
                     g.op_name if g else "*", g.dtype if g else "", (t or g).label,
                     _shape(t.shape) if t else "", ("YES" if overflows(r, fp16, as_run) else "NO") if m else "NaN"]
            for column in COLUMNS[9:19]:
                if column == "StandardDeviation":
                    cells.append(f"({m.target_mean:.3f};{m.target_std:.3f}),({m.golden_mean:.3f};{m.golden_std:.3f})"
                                 if m else "")
                else:
                    cells.append(_num(getattr(m, METRIC_COLUMNS[column])) if m else "")
            cells += [m.reason if m else r.note, "YES" if g is None else "NO", "YES" if r.is_output else "NO",
                      ("YES" if r.violations else "NO") if m else "NaN",
                      _shape(g.shape) if g else "", r.status, "YES" if r.is_input else "NO",
                      absolute_locator(r.golden_file), absolute_locator(r.target_file), result.golden_mode,
                      result.target_mode]
            # The counts behind the overflow verdict, so a table read back says the same numbers.
            cells += ([m.target_nonfinite, m.golden_nonfinite, _num(m.target_absmax), _num(m.golden_absmax)]
                      if m else ["", "", "", ""])
            # What the verdicts rest on beyond msaccucmp's columns (JSON where it is a record).
            cells += ([m.target_only_nonfinite, "" if m.finite_pairs is None else m.finite_pairs,
                       json.dumps(m.rel_err_near_zero) if m.rel_err_near_zero else "",
                       json.dumps(r.underflow) if r.underflow else ""] if m else ["", "", "", ""])
            cells.append("YES" if r.mask else "")
            out.writerow(cells)
    tmp.replace(path)  # readers never see a half-written table
    return path


def absolute_locator(locator: str, base: Path | None = None) -> str:
    """``locator`` (``file.npy`` or ``file#output.0``) with its file made absolute: relative to
    ``base`` (a CSV's folder), else to the working folder. Empty stays empty."""
    if not locator:
        return locator
    file, hash_, slot = locator.rpartition("#") if "#" in locator else (locator, "", "")
    path = Path(file)
    if not path.is_absolute():
        path = (base / path) if base is not None else path.resolve()
    return str(path) + hash_ + slot


def _shape(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"
