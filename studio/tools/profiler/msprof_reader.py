"""Ascend profiling folders: msprof ``PROF_*`` (both layouts) and PyTorch-NPU ``ASCEND_PROFILER_OUTPUT``.

Layouts (reference: ascend_formats.md §3.1):

* CANN >= 8.0: ``PROF_*/mindstudio_profiler_output/msprof_{ts}.json`` + ``op_summary_{ts}.csv`` ...
  (large exports split into ``msprof_slice_0_{ts}.json``, ``op_summary_slice_1_{ts}.csv``), and
  ``msprof_{ts}.db`` beside it;
* older CANN: ``PROF_*/device_{n}/timeline/msprof_*.json`` and ``device_{n}/summary/*.csv``;
* PyTorch: ``*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json``, ``kernel_details.csv``,
  ``op_statistic.csv``, ``api_statistic.csv``, ``step_trace_time.csv``.

All timeline files of one folder go into one trace (slices merged back); summary CSVs become
tables. The timeline comes from the richest source the folder holds (timeline JSONs, the database, or the
op summary), so there is always something on the timeline, and the facts say which was used.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import PROFILER, FileFormat
from studio.core.jobs import CancelToken, Progress
from studio.tools.profiler import csv_tables
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.chrome_reader import read_chrome_trace
from studio.tools.profiler.model import Table, Trace
from studio.tools.profiler.npu_smi import SAMPLES_FILE
from studio.core.units import human_size
from studio.core.safe_read import SETTINGS_CAP, load_json

_TIMELINE = re.compile(r"^(msprof|trace_view)(_slice)?[_\d]*\.json$")
_CSV_KINDS = re.compile(r"^(op_summary|op_statistic|api_statistic|task_time|msprof_tx|kernel_details|"
                        r"step_trace_time)(_slice)?[_\d]*\.csv$")


def find_profile_files(folder: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """(timeline JSONs, summary CSVs, databases) under an msprof or PyTorch-NPU folder.

    Files named as msprof and the PyTorch profiler name them are found in their standard places;
    in the folder itself, other ``.json``/``.csv`` files count too when their content is a trace or
    a profiling summary (exports copied together under other names)."""
    folder = Path(folder)
    candidates = [folder]
    for sub in ("ASCEND_PROFILER_OUTPUT", "mindstudio_profiler_output"):
        if (folder / sub).is_dir():
            candidates.append(folder / sub)
    candidates += sorted(p for p in folder.glob("device_*") if p.is_dir())
    candidates += sorted(p / sub for p in folder.glob("device_*") for sub in ("timeline", "summary") if (p / sub).is_dir())
    candidates += sorted(p for p in folder.glob("PROF_*") if p.is_dir())  # an *_ascend_pt folder
    timelines, tables, databases = [], [], []
    seen: set[Path] = set()
    for place in candidates:
        if place in seen:
            continue
        seen.add(place)
        for child in sorted(place.iterdir()):
            if not child.is_file() or child.name == SAMPLES_FILE:
                continue  # npu-smi readings are added to whichever timeline is drawn
            if _TIMELINE.match(child.name):
                timelines.append(child)
            elif _CSV_KINDS.match(child.name):
                tables.append(child)
            elif child.suffix == ".db" and child.name.startswith(("msprof", "ascend_pytorch_profiler")):
                databases.append(child)
            elif place == folder and child.suffix.lower() in (".json", ".csv"):
                kind = _sniff(child)
                if kind in ("chrome_trace", "ort_profile"):
                    timelines.append(child)
                elif kind == "profiling_csv":
                    tables.append(child)
    # A PyTorch folder holds the raw PROF_ beside its output: prefer the processed output's files.
    if any(p.name == "trace_view.json" for p in timelines):
        timelines = [p for p in timelines if p.name == "trace_view.json"]
    return timelines, tables, databases


_SLICE_TABLES = re.compile(r"^(op_summary|kernel_details)(_slice)?[_\d]*\.csv$")


def timeline_sources(folder: Path) -> list[Path]:
    """The files of ``folder`` a timeline is drawn from (timeline JSONs, profiler databases, op
    summaries / kernel_details); empty when it holds statistics only (step_trace_time.csv,
    communication.json, analysis.db), which the Profiler shows as tables with no slice."""
    timelines, tables, databases = find_profile_files(folder)
    return timelines + databases + [t for t in tables if _SLICE_TABLES.match(t.name)]


def _sniff(path: Path) -> str | None:
    from studio.core import formats

    try:
        return formats.detect(path).format.id
    except UserError:
        return None


def read_profile_folder(folder: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, Trace]:
    """Read a profiling folder into one trace: the timeline from its richest source, every summary
    CSV as a table.

    The timeline JSON files of one export are merged (sliced exports). When the folder also holds
    a database or an op summary with more events than the timeline files (exports of different
    runs copied together, or a timeline written without device data), that source draws the
    timeline instead; the trace's facts say which source was used and what was left aside."""
    folder = Path(folder)
    timelines, csvs, databases = find_profile_files(folder)
    if not (timelines or csvs or databases):
        raise UserError("No profiling data in this folder", folder,
                        "Export it first (msprof --export=on --output=PROF_dir), or open the PROF_* folder "
                        "that holds mindstudio_profiler_output/ or device_N/timeline/.")
    builder = TraceBuilder()
    for index, path in enumerate(timelines):
        if cancel:
            cancel.raise_if_cancelled()
        yield Progress(index / max(1, len(timelines)) * 0.7, f"timeline {path.name}")
        yield from read_chrome_trace(path, cancel, builder, build=False)
    tables = read_tables(csvs)
    sources = [(builder.slice_count, "timeline", timelines)]
    if databases:
        from studio.tools.profiler.db_reader import count_events

        sources.append((count_events(databases[0]), "database", databases[:1]))
    summary = tables.get("op_summary")
    if summary is not None:
        sources.append((len(summary.rows), "op_summary", [Path(summary.source)]))
    count, kind, used = max(sources, key=lambda s: s[0])  # the first (timeline) wins ties
    if kind == "database":
        from studio.tools.profiler.db_reader import add_database

        yield Progress(0.5, f"reading {used[0].name}")
        builder = TraceBuilder()
        add_database(builder, used[0])
    elif kind == "op_summary":
        builder = TraceBuilder()
        csv_tables.add_op_summary_slices(builder, summary)
    if (folder / SAMPLES_FILE).is_file():  # npu-smi read during an on-host run (npu_smi.py)
        yield from read_chrome_trace(folder / SAMPLES_FILE, cancel, builder, build=False)
    builder.tables.update(tables)
    builder.facts.update(folder_facts(folder, timelines + csvs + databases))
    if len([s for s in sources if s[2]]) > 1:
        builder.facts.update(source_facts(folder, sources, kind))
    if cancel:
        cancel.raise_if_cancelled()
    yield Progress(0.85, "sorting and nesting slices")
    return builder.build(source=str(folder))


_UNITS = {"timeline": "slices", "database": "events", "op_summary": "rows"}


def source_facts(folder: Path, sources: list[tuple[int, str, list[Path]]], used: str) -> dict[str, str]:
    """Facts naming the timeline source used and the ones left aside (with their sizes)."""
    def label(count: int, kind: str, paths: list[Path]) -> str:
        names = ", ".join(_relative(p, folder) for p in paths[:3]) + (" …" if len(paths) > 3 else "")
        return f"{names} ({count:,} {_UNITS[kind]})"

    chosen = next(s for s in sources if s[1] == used)
    others = [label(*s) for s in sources if s[1] != used and s[2]]
    return {"timeline source": label(*chosen) + " — the richest source in the folder",
            "not drawn": "; ".join(others) + " (summary tables stay in Statistics)"}


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return path.name


def read_tables(paths: list[Path]) -> dict[str, Table]:
    """Summary CSVs by kind, slices of one kind merged; unreadable ones are skipped."""
    by_kind: dict[str, list[Table]] = {}
    for path in paths:
        try:
            table = csv_tables.read_table(path)
        except UserError:
            continue  # a stray CSV must not stop the folder from opening
        by_kind.setdefault(table.kind, []).append(table)
    return {kind: csv_tables.merge_tables(tables) for kind, tables in by_kind.items()}


def read_summary_csv(path: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, Trace]:
    """A single summary CSV: a table, and slices too when it is an op summary / kernel_details."""
    yield Progress(None, f"reading {path.name}")
    table = csv_tables.read_table(path)
    builder = TraceBuilder()
    builder.tables[table.kind] = table
    if table.kind == "op_summary":
        csv_tables.add_op_summary_slices(builder, table)
    builder.facts.update(folder_facts(path.parent, [path]))
    return builder.build(source=str(path))


def folder_facts(folder: Path, files: list[Path]) -> dict[str, str]:
    """Host and device facts: sizes, and what msprof's info.json / profiler_info.json say."""
    facts = {"files": str(len(files)), "size": human_size(sum(p.stat().st_size for p in files if p.is_file()))}
    for info in sorted(list(folder.glob("**/info.json*"))[:4] + list(folder.glob("**/profiler_info*.json"))[:2]):
        try:
            data = load_json(info, "msprof info file", SETTINGS_CAP, errors="replace")
        except (OSError, ValueError, UserError):
            continue
        if isinstance(data, dict):
            for key, value in _flat_facts(data):
                if len(facts) < 60:
                    facts[f"{info.parent.name}/{key}"] = value
    return facts


def _flat_facts(data: dict) -> list[tuple[str, str]]:
    """Scalars of an info.json, one level of nesting flattened (``DeviceInfo.ai_core_num``)."""
    out = []
    for key, value in data.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            value = value[0]  # per-device / per-CPU lists: the first entry tells the hardware
        if isinstance(value, dict):
            out += [(f"{key}.{k}", str(v)) for k, v in value.items() if isinstance(v, (str, int, float)) and str(v)]
        elif isinstance(value, (str, int, float)) and str(value):
            out.append((key, str(value)))
    return out


# ---------------------------------------------------------------- the formats this module reads
def match_profiling_csv(path: Path, head: bytes) -> bool:
    """An msprof or PyTorch-NPU summary CSV: a header the table reader knows (:func:`csv_tables.table_kind`)."""
    import csv

    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").lstrip("\ufeff")
    try:
        cells = next(csv.reader([first]), [])
    except csv.Error:
        return False
    return csv_tables.table_kind([csv_tables.canonical(c) for c in cells]) is not None


def match_msprof_dir(path: Path) -> bool:
    """A ``PROF_*`` folder (either layout), or msprof exports copied together into one folder."""
    if path.name.startswith("PROF_"):
        return True
    if (path / "mindstudio_profiler_output").is_dir() or any(path.glob("device_[0-9]*/summary")):
        return True
    if (path / "studio_profile.json").is_file():
        return False  # `studio profile run` writes msprof-style CSVs too
    return any(path.glob("msprof*.db")) or any(path.glob("msprof*.json")) or any(path.glob("op_summary*.csv"))


def match_pytorch_npu_dir(path: Path) -> bool:
    """``ASCEND_PROFILER_OUTPUT``, the ``*_ascend_pt`` folder holding it, or its files copied together."""
    if path.name == "ASCEND_PROFILER_OUTPUT" or (path / "ASCEND_PROFILER_OUTPUT").is_dir():
        return True
    return (path / "trace_view.json").is_file() and (path / "kernel_details.csv").is_file()


PROFILING_CSV = FileFormat("profiling_csv", "Profiling summary CSV (msprof / PyTorch-NPU)", PROFILER,
                           match_profiling_csv, read_summary_csv)
MSPROF_DIR = FileFormat("msprof_dir", "msprof PROF_ folder", PROFILER, match_msprof_dir, read_profile_folder,
                        folder=True)
PYTORCH_NPU_DIR = FileFormat("pytorch_npu_dir", "PyTorch-NPU profiler output", PROFILER, match_pytorch_npu_dir,
                             read_profile_folder, folder=True)
