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


# The cluster report's JSON from which it is read in a worker process: reading and assembling the
# ranks' communication files is Python work of ~0.3 s per MB, which a thread does taking turns with
# the window's thread for the interpreter (its ticks came 50-60 ms late at 16 ranks x 50k events).
CLUSTER_OFFLOAD_BYTES = 1 << 20


def cluster_job(folder: Path, cancel=None) -> Generator[Progress, None, dict]:
    """``studio profile cluster FOLDER --json``: in a worker process when the ranks' JSON files are
    big (16 ranks of 1M events: 20 MB of communication.json decoded, each file in one C call that
    would hold the window)."""
    from studio.tools.profiler.cluster.engine import json_bytes

    report = yield from _in_worker_if("studio.tools.profiler.cluster.engine:cluster_json", folder, cancel,
                                      json_bytes, CLUSTER_OFFLOAD_BYTES)
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
    """The job ``entry`` (``module:function`` of a folder, returning JSON), offloaded when the ranks'
    trace_view.json files are big; (None, the engine's message) on a UserError."""
    from studio.tools.profiler.cluster.free_gaps import trace_bytes

    try:
        return (yield from _in_worker_if(entry, folder, cancel, trace_bytes)), ""
    except UserError as exc:
        return None, exc.format()


def _in_worker_if(entry: str, folder: Path, cancel, size, limit: int | None = None
                  ) -> Generator[Progress, None, dict]:
    """The job ``entry`` — in a worker process when ``size(folder)`` (the bytes it decodes) reaches
    ``limit`` (default: the profiler's OFFLOAD_BYTES): json parsing holds the interpreter, and a
    thread doing it would make the window wait."""
    import importlib

    if limit is None:
        from studio.tools.profiler.loader import OFFLOAD_BYTES as limit

    if size(folder) >= limit:
        from studio.core.workers import WorkerUnavailable, run_in_worker

        try:
            return (yield from run_in_worker(entry, str(folder), cancel=cancel))
        except WorkerUnavailable:
            pass  # read here, as small exports are
    module, _, name = entry.partition(":")
    return (yield from getattr(importlib.import_module(module), name)(str(folder)))
