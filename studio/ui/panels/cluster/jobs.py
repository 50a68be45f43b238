"""The cluster panel's jobs: the engines run on a worker thread, their JSON comes back."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import Progress
from studio.core.serial import to_json

# Points of a memory curve sent to the chart: each bucket keeps its lowest and highest sample, so the
# envelope and the peak survive (a long profile has hundreds of thousands of samples).
CURVE_POINTS = 4000


def cluster_job(folder: Path) -> Generator[Progress, None, dict]:
    """``studio profile cluster FOLDER --json``."""
    from studio.tools.profiler.cluster import open_cluster

    yield Progress(None, f"reading the ranks of {folder.name}")
    report = to_json(open_cluster(folder))
    report["rank_folders"] = rank_folder_files(report)
    yield Progress(1.0, f"{report['source'].get('ranks', 0)} ranks")
    return report


def rank_folder_files(report: dict) -> dict[str, dict[str, list[str]]]:
    """For each rank's own folder: the files its timeline would be drawn from, and every file it
    holds (relative names), so the panel can say why a rank has no timeline and what it has instead."""
    from studio.tools.profiler.msprof_reader import timeline_sources
    from studio.ui.panels.cluster.state import ClusterState

    state, out = ClusterState(report=report), {}
    for row in report.get("ranks", []):
        folder = state.rank_folder(row)
        if folder is None or str(folder) in out or not folder.is_dir():
            continue
        try:
            files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
            timeline = [str(p.relative_to(folder)) for p in timeline_sources(folder)]
        except (OSError, UserError):
            continue  # unreadable: the button opens it and the Profiler says why
        out[str(folder)] = {"timeline": timeline, "files": files}
    return out


def memory_job(folder: Path) -> Generator[Progress, None, tuple[dict | None, str]]:
    """``studio profile memory FOLDER --json`` with each device's curve and its operator blocks (the
    Memory tab answers an interval selection from them); (None, the engine's message) when the folder
    has no memory data — common for a cluster profile, so no error dialog for it."""
    from studio.tools.profiler.memory import open_memory

    yield Progress(None, f"reading the memory records of {folder.name}")
    try:
        return to_json(open_memory(folder, series_points=CURVE_POINTS, blocks=True)), ""
    except UserError as exc:
        return None, exc.format()


def heat_job(ranks: list[int], rows: list[dict]) -> Generator[Progress, None, object]:
    """The heat map of the chosen step and group (:func:`.heat_data.heat_data`)."""
    from studio.ui.panels.cluster.heat_data import heat_data

    yield Progress(None, f"colouring {len(rows):,} links between {len(ranks)} ranks")
    return heat_data(ranks, rows)


def comm_job(folder: Path, cancel=None) -> Generator[Progress, None, tuple[dict | None, str]]:
    """``studio profile cluster FOLDER --comm --json``; (None, the engine's message) when the folder
    cannot have it (msprof-analyze's output keeps no per-rank op times). The slow ops' causes of a
    text export are read from its trace_view.json files: big ones in a worker process."""
    return (yield from _offloaded("studio.tools.profiler.cluster.comm_report:comm_json", folder, cancel))


def free_job(folder: Path, cancel=None) -> Generator[Progress, None, tuple[dict | None, str]]:
    """``studio profile cluster FOLDER --free --json`` with the gaps the panel lists (the longest of
    each rank and cause); (None, the engine's message) when the folder cannot have it
    (msprof-analyze's output keeps no timeline)."""
    return (yield from _offloaded("studio.tools.profiler.cluster.free_gaps:free_view_json", folder, cancel))


def _offloaded(entry: str, folder: Path, cancel) -> Generator[Progress, None, tuple[dict | None, str]]:
    """The job ``entry`` (``module:function`` of a folder, returning JSON) — in a worker process when
    the ranks' trace_view.json files are big: json parsing holds the interpreter, and a thread doing
    it would make the window wait. (None, the engine's message) on a UserError."""
    import importlib

    from studio.tools.profiler.cluster.free_gaps import trace_bytes
    from studio.tools.profiler.loader import OFFLOAD_BYTES

    try:
        if trace_bytes(folder) >= OFFLOAD_BYTES:
            from studio.core.workers import WorkerUnavailable, run_in_worker

            try:
                return (yield from run_in_worker(entry, str(folder), cancel=cancel)), ""
            except WorkerUnavailable:
                pass  # read here, as small exports are
        module, _, name = entry.partition(":")
        return (yield from getattr(importlib.import_module(module), name)(str(folder))), ""
    except UserError as exc:
        return None, exc.format()
