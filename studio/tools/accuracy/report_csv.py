"""Reading a comparison CSV (Studio's, or msaccucmp's) back into a :class:`.compare.CompareResult`.

The columns are described in :mod:`.csv_write`, which writes them. A relative tensor locator, from
an older table or one edited by hand, is read relative to the CSV's folder.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import ACCURACY, FileFormat, csv_header, path_only
from studio.core.safe_read import read_text
from studio.tools.accuracy.advisor import advise
from studio.tools.accuracy.compare import CompareResult, uncovered_parts
from studio.tools.accuracy.csv_write import METRIC_COLUMNS, absolute_locator
from studio.tools.accuracy.metrics import Metrics, Thresholds
from studio.tools.accuracy.row import Row
from studio.tools.accuracy.tensors import DTYPE_AS_RUN_MODES, FP16_MODES, DumpSet, TensorEntry


def _file_of(locator: str) -> str:
    return locator.rpartition("#")[0] if "#" in locator else locator


def _located(locator: str, base: Path) -> str:
    """A locator read from a CSV in ``base``: relative ones resolve against the CSV's folder (a
    table written from another working folder still finds tensors kept beside it; one that only
    the working folder holds, as older tables were written, is still found)."""
    if not locator or Path(_file_of(locator)).is_absolute():
        return locator
    beside = absolute_locator(locator, base)
    if not _exists(_file_of(beside)) and _exists(_file_of(locator)):
        return absolute_locator(locator)
    return beside


def _exists(name: str) -> bool:
    """Whether a file a CSV names exists; a name no file can have (too long, a NUL) does not."""
    try:
        return Path(name).exists()
    except (OSError, ValueError):
        return False


def _parse_shape(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in re.findall(r"\d+", text))


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def read_csv(path: Path | str, thresholds: Thresholds | None = None):
    """Read a comparison CSV written by :func:`write_csv` (or msaccucmp) back into a CompareResult."""
    path = Path(path)
    base = path.resolve().parent
    thresholds = thresholds or Thresholds()
    try:
        table = list(csv.reader(io.StringIO(read_text(path, "comparison CSV", encoding="utf-8-sig"), newline="")))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"Cannot read the comparison CSV ({exc})", path, "Check the file.") from exc
    except csv.Error as exc:  # a cell over the csv module's field limit (128 KiB), a NUL byte
        raise UserError(f"The comparison CSV cannot be parsed: {exc}", path,
                        "No cell of a comparison table is this long; export the table again.") from exc
    if not table or "CosineSimilarity" not in table[0]:
        raise UserError("Not a comparison CSV (no CosineSimilarity column)", path,
                        "Open a CSV written by `studio compare -o` or msaccucmp.")
    header = table[0]
    col = {}
    for i, name in enumerate(header):  # the second DataType is the golden one
        col.setdefault(name if name not in col else f"{name}2", i)
    rows, modes = [], ("", "")

    def cell(cells, name, default=""):
        i = col.get(name)
        return cells[i] if i is not None and i < len(cells) else default

    for line, cells in enumerate(table[1:], start=2):
        if not cells:
            continue
        try:
            index = int(cell(cells, "Index", str(len(rows))))
        except ValueError as exc:
            raise UserError(f"Index is not a number: {cell(cells, 'Index')!r}", f"{path}, line {line}",
                            "The CSV is damaged; export it again.") from exc
        target_op, golden_op = cell(cells, "NPUDump"), cell(cells, "GroundTruth")
        op_type = cell(cells, "OpType")
        t = None if target_op in ("*", "") else TensorEntry(
            target_op, op_type, 0, "output", index, target_op, _parse_shape(cell(cells, "Shape")),
            cell(cells, "DataType"), _located(cell(cells, "TargetFile"), base))
        g = None if golden_op in ("*", "") else TensorEntry(
            golden_op.split(",")[-1], op_type, 0, "output", index, golden_op,
            _parse_shape(cell(cells, "GoldenShape") or cell(cells, "Shape")), cell(cells, "DataType2"),
            _located(cell(cells, "GoldenFile"), base))
        status = cell(cells, "Status")
        m = None
        if t is not None and g is not None and cell(cells, "CosineSimilarity") != "":
            m = Metrics(size=0)
            for column, attr in METRIC_COLUMNS.items():
                setattr(m, attr, _float(cell(cells, column, "nan")))
            stats = re.findall(r"\(([-\d.naif]+);([-\d.naif]+)\)", cell(cells, "StandardDeviation"))
            if len(stats) == 2:
                (m.target_mean, m.target_std), (m.golden_mean, m.golden_std) = (
                    tuple(_float(v) for v in pair) for pair in stats)
            counted = cell(cells, "TargetNonFinite")
            if counted.strip().isdigit():  # tables from this version carry the real counts
                m.target_nonfinite = int(counted)
                golden_count = cell(cells, "GoldenNonFinite")
                m.golden_nonfinite = int(golden_count) if golden_count.strip().isdigit() else 0
                m.target_absmax = _float(cell(cells, "TargetAbsMax", "nan"))
                m.golden_absmax = _float(cell(cells, "GoldenAbsMax", "nan"))
            elif cell(cells, "OverFlow") == "YES":
                m.target_nonfinite = 1  # an msaccucmp table says only that it overflows
            if cell(cells, "FinitePairs").strip().isdigit():
                m.finite_pairs = int(cell(cells, "FinitePairs"))
                only = cell(cells, "TargetOnlyNonFinite")
                m.target_only_nonfinite = int(only) if only.strip().isdigit() else 0
            m.rel_err_near_zero = _record(cell(cells, "RelErrNearZero"))
            m.empty = status == "empty"
            reason = cell(cells, "CompareFailReason")
            m.reasons = [reason] if reason else []
        row = Row(index=index, name=(t or g).op_name if (t or g) else f"row {index}", op_type=op_type,
                  golden=g, target=t, how=status if m is None else "name",
                  note=cell(cells, "CompareFailReason") if m is None else "", metrics=m,
                  is_input=cell(cells, "IsInput") == "YES", is_output=cell(cells, "IsOutputNode") == "YES",
                  golden_file=_located(cell(cells, "GoldenFile"), base),
                  target_file=_located(cell(cells, "TargetFile"), base))
        if m is not None:
            row.violations = thresholds.violations(m)
            row.underflow = _record(cell(cells, "Underflow"))
            row.mask = cell(cells, "AttentionMask") == "YES"
        rows.append(row)
        modes = (cell(cells, "GoldenMode"), cell(cells, "TargetMode"))
    golden_root = str(Path(rows[0].golden_file).parent) if rows and rows[0].golden_file else str(path)
    target_root = str(Path(rows[0].target_file).parent) if rows and rows[0].target_file else str(path)
    uncovered = _uncovered_of(target_root, golden_root)  # a table read back keeps its "not covered"
    from studio.tools.accuracy.diagnosis import diagnose

    findings = advise(rows, thresholds.cosine, fp16_target=modes[1] in FP16_MODES, uncovered=uncovered,
                      thresholds=thresholds, dtype_as_run=modes[1] in DTYPE_AS_RUN_MODES)
    return CompareResult(rows=rows, findings=findings, golden=golden_root, target=target_root,
                         golden_mode=modes[0], target_mode=modes[1], thresholds=thresholds,
                         model=_model_of(target_root), golden_model=_model_of(golden_root), uncovered=uncovered,
                         diagnosis=diagnose(rows, findings, thresholds))


def _record(text: str) -> dict | None:
    """A JSON object cell (None when empty or damaged: the table still opens)."""
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _uncovered_of(*roots: str) -> dict:
    """What the dumps behind a table did not cover (their manifests say), when they are still there."""
    import json

    sides = []
    for root in roots:
        try:
            info = json.loads((Path(root) / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            info = {}
        sides.append(DumpSet(root=Path(root), kind="local", mode="", entries=[],
                             info=info if isinstance(info, dict) else {}))
    return uncovered_parts(sides[1], sides[0])


def _model_of(root: str) -> str | None:
    """The model a Studio dump folder was made from (its manifest says), if it is still there."""
    import json

    try:
        return json.loads((Path(root) / "manifest.json").read_text(encoding="utf-8")).get("model")
    except (OSError, ValueError, RecursionError, AttributeError):
        return None


def match_compare_csv(path: Path, head: bytes) -> bool:
    """A comparison CSV (Studio's, msaccucmp's, msprobe's): a CosineSimilarity column."""
    return "cosinesimilarity" in csv_header(head)


COMPARE_CSV = FileFormat("compare_csv", "Accuracy comparison CSV", ACCURACY, match_compare_csv, path_only(read_csv))
