"""What the Profiler panel shows, without Qt: the opened profiles, the current one, the find
matches, the selection, the requests waiting for a profile to open, and the rows of its tables.

The panel (``panel.py``) only lays out widgets and wires them to this state; everything here can
be tested without a display. The jobs that load a profile are in ``loading.py``.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from studio.core.jobs import CancelToken, Progress
from studio.tools.profiler import csv_tables, stats
from studio.tools.profiler.model import Trace
from studio.tools.profiler.stats import NameStat
from studio.ui.panels.profiler.timefmt import format_duration

DEFER_TABLES_SLICES = 200_000  # from this size on, the tables fill one event-loop turn after the timeline
RANGE_COLUMNS = ["Name", "Count", "Total (µs)", "Avg (µs)", "Max (µs)", "Share of range"]


@dataclass
class Loaded:
    """One opened profile and its statistics."""

    path: Path
    label: str
    trace: Trace
    by_name: list
    apis: list
    tables: dict
    share: Any = None  # op share per name id (timeline colours), from stats.share_by_name_id
    ready: dict | None = None  # the statistics tab's per-op/per-API rows (stats_tab.ready_rows)
    counted: str = ""  # which slices the op statistics count (measured iterations, warm-ups left out)
    first_view: tuple[int, int] | None = None  # (t0, t1) ns the timeline opens on (None: the whole trace)
    first_view_note: str = ""  # what the first view shows, for the info line
    cached: bool = False  # nothing to write to the cache after display
    counter_max: list[float] | None = None  # each counter's largest magnitude, when computed in the job
    complete: bool = True  # False: ranks' lanes shown while some ranks still decode, or a file still read
    rows: list | None = None  # the timeline's rows, nothing collapsed or pinned (laid out in the job)
    reading: str = ""  # how much is read, for the band over the timeline while not complete
    computed_in: str = ""  # "pid:thread" that computed the statistics (view_stats.ViewStats.where)
    window: Any = None  # what re-reads the visible window (a DbWindow, a RankWindows), for db_follow


def area_job(trace: Trace, t0: int, t1: int, tracks: list[int], cancel: CancelToken
             ) -> Generator[Progress, None, tuple]:
    """The per-name statistics of the slices of ``tracks`` in [t0, t1] (ns) and the area's
    computing / communication / free split, as a job."""
    from studio.tools.profiler.area import breakdown

    yield Progress(None, f"aggregating {len(tracks)} track(s) over the selected range")
    return stats.by_name(trace, stats.in_range(trace, t0, t1, tracks)), breakdown(trace, t0, t1, tracks)


def area_text(split, labels: list[str]) -> str:
    """The note above the range table for an area."""
    shares = split.shares()
    names = ", ".join(labels[:4]) + (f" and {len(labels) - 4} more" if len(labels) > 4 else "")
    return (f"{len(labels)} track(s) ({names}) over {format_duration(split.t1 - split.t0)}: computing "
            f"{shares['computing']:.1%} · communication not overlapped {shares['communication_not_overlapped']:.1%}"
            f" · free {shares['free']:.1%}")


@dataclass
class ProfilerState:
    """The profiles opened in the panel and what the user chose in them."""

    profiles: list[Loaded] = field(default_factory=list)
    current: Loaded | None = None
    routed: list[Path] = field(default_factory=list)  # every path routed here, in order
    matches: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # find matches, in time order
    match_at: int = -1  # the match selected last (-1: none yet)
    selected_name: str = ""  # the op "Show in graph" shows
    pending_range: tuple[Path, int, int] | None = None  # a time range to show once its profile opens
    pending_compare: tuple[Path, Path] | None = None  # two profiles to compare once both are open
    iterations: int = 0  # local profile runs: timed iterations after warm-ups, seeded random inputs
    warmup: int = 0
    seed: int = 0
    run_on: str | None = None  # the host of the latest profile run started here (None: here)
    last_run: Any = None  # the RunResult of the latest local profile made here
    last_bench: dict | None = None  # the JSON of the latest benchmark made here

    def route(self, path: Path) -> int | None:
        """Note ``path`` as routed here; returns its index when it is already open."""
        if path not in self.routed:
            self.routed.append(path)
        return self.index_of(path)

    def index_of(self, path: Path) -> int | None:
        """The index of the open profile at ``path``, or None."""
        return next((i for i, p in enumerate(self.profiles) if p.path == path), None)

    def add(self, loaded: Loaded) -> list[str]:
        """Add an opened profile (its label made unique) and return every profile's label."""
        self.profiles.append(loaded)
        labels = [p.label for p in self.profiles]
        if labels.count(loaded.label) > 1:
            loaded.label = f"{loaded.label} ({len(self.profiles)})"
            labels[-1] = loaded.label
        return labels

    def choose(self, index: int) -> Loaded | None:
        """Make profile ``index`` the current one; None when there is no such profile."""
        if not 0 <= index < len(self.profiles):
            return None
        self.current = self.profiles[index]
        return self.current

    def take_pending_range(self, path: Path) -> tuple[Path, int, int] | None:
        """The range waiting for the profile at ``path``, if any (it is forgotten)."""
        pending, self.pending_range = self.pending_range, None
        return pending if pending is not None and pending[0] == path else None

    def compare_ready(self) -> tuple[int, int] | None:
        """The indices of the profiles waiting to be compared once both are open (then forgotten)."""
        if self.pending_compare is None:
            return None
        paths = [p.path.resolve() for p in self.profiles]
        if not all(p in paths for p in self.pending_compare):
            return None
        base, new = (paths.index(p) for p in self.pending_compare)
        self.pending_compare = None
        return base, new

    def clear_matches(self) -> None:
        self.matches, self.match_at = np.zeros(0, np.int64), -1

    def set_matches(self, found: np.ndarray) -> None:
        self.matches, self.match_at = found, -1

    def step_match(self, step: int) -> int | None:
        """Move to the next (1) or previous (-1) match, wrapping; returns its slice index, or None."""
        if not self.matches.size:
            return None
        self.match_at = (self.match_at + step) % self.matches.size
        return int(self.matches[self.match_at])

    def match_text(self) -> str:
        """"3 / 133": where the selected match is among the matches."""
        return f"{self.match_at + 1:,} / {self.matches.size:,}"


def info_text(trace: Trace) -> str:
    """The toolbar's one-line description of a trace (warnings first)."""
    text = (f"{trace.size:,} slices · {len(trace.tracks)} tracks · {len(trace.counters)} counters · "
            f"{format_duration(trace.span_ns)}")
    return f"⚠ {len(trace.warnings)} warning(s), see Summary · {text}" if trace.warnings else text


def find_slices(trace: Trace, needle: str) -> np.ndarray:
    """Indices of the slices whose name contains ``needle`` (lower case), in time order."""
    ids = np.array([i for i, name in enumerate(trace.names) if needle in name.lower()], dtype=np.int32)
    if not ids.size:
        return np.zeros(0, np.int64)
    found = np.flatnonzero(np.isin(np.asarray(trace.name), ids))
    return found[np.argsort(np.asarray(trace.start)[found], kind="stable")]


def find_job(trace: Trace, needle: str, cancel: CancelToken) -> Generator[Progress, None, np.ndarray]:
    """:func:`find_slices` as a job."""
    yield Progress(None, f"finding {needle!r}")
    return find_slices(trace, needle)


def range_job(trace: Trace, t0: int, t1: int, cancel: CancelToken) -> Generator[Progress, None, list]:
    """The per-name statistics of the slices in [t0, t1] (ns), as a job."""
    yield Progress(None, "aggregating the selected range")
    return stats.by_name(trace, stats.in_range(trace, t0, t1))


def range_rows(rows: list) -> list[list]:
    """The Selected range table's rows (:data:`RANGE_COLUMNS`), already by total."""
    return [[s.name, s.count, s.total_us, s.avg_us, s.max_us, s.share] for s in rows]


def compare_job(base: Loaded, new: Loaded, rerun: bool, cancel: CancelToken) -> Generator[Progress, None, tuple]:
    """Compare two opened profiles; returns (the comparison, the benchmark rows, their two labels),
    the rows empty unless both are benchmarks. ``rerun``: time both models again, interleaved."""
    from studio.tools.bench.profile_folder import read_bench
    from studio.tools.bench.result import compare_rows
    from studio.tools.profiler.compare import compare, rerun_plan

    from studio.tools.profiler.db_window import whole_trace

    yield Progress(None, "comparing profiles")
    # a database shown by window is compared whole (read in full here, in the job)
    base_trace, new_trace = (yield from whole_trace(base.trace)), (yield from whole_trace(new.trace))
    result = compare(base_trace, new_trace)
    if rerun:  # two local runs made here: time both models again, interleaved
        plan = rerun_plan(base_trace, new_trace)
        change = None
        if not isinstance(plan, str):
            from studio.tools.bench.ab_run import ab_models

            change = yield from ab_models(*plan, cancel=cancel)
        result.judge_rerun(plan, change)
    benches = read_bench(base.path), read_bench(new.path)
    if not all(benches):
        return result, [], ()
    labels = tuple(f"{b.get('tool')} on {b.get('where')}" for b in benches)  # what measured, where
    return result, compare_rows(*benches), labels


def overlay_values(loaded: Loaded) -> dict[str, float]:
    """Time share per graph node, in percent (as the graph's legend reads), for a profile that knows
    its model; ORT's node names are mapped back to the model's."""
    from studio.tools.profiler.ort_reader import graph_node_name

    values: dict[str, float] = {}
    for stat in loaded.by_name:
        if stat.share > 0:
            node = graph_node_name(stat.name)
            values[node] = values.get(node, 0.0) + 100.0 * stat.share
    return values


def graph_name(loaded: Loaded | None, name: str) -> tuple[Path | None, str]:
    """The model and node name "Show in graph" asks for: a local ORT run's node named as the model
    names it, not as ORT renamed it."""
    model = loaded.trace.model_path if loaded is not None else None
    if model:
        from studio.tools.profiler.ort_reader import graph_node_name

        name = graph_node_name(name)
    return (Path(model) if model else None), name


def slice_rows(trace: Trace, index: int) -> list[list[str]]:
    """Everything about one slice, for the Selected slice table."""
    start, dur = int(trace.start[index]), int(trace.dur[index])
    rows = [["Name", trace.slice_name(index)],
            ["Track", trace.track_label(int(trace.track[index]))],
            ["Start", format_duration(start)], ["Duration", format_duration(dur)],
            ["End", format_duration(start + dur)], ["Depth", str(int(trace.depth[index]))]]
    if trace.cats[int(trace.cat[index])]:
        rows.append(["Category", trace.cats[int(trace.cat[index])]])
    for key, value in trace.slice_args(index).items():
        rows.append([f"args.{key}", value if isinstance(value, str) else json.dumps(value)])
    return rows


def summary_rows(loaded: Loaded) -> list[list[str]]:
    """Facts for the Summary tab: the source, the trace's shape, and what the data says."""
    trace = loaded.trace
    processes = sorted({t.process for t in trace.tracks} | {c.process for c in trace.counters})
    rows = [] if loaded.complete else [["Partial", loaded.reading or loaded.first_view_note or "still reading"]]
    rows += [["Warning", text] for text in trace.warnings]  # first: what makes the numbers below suspect
    rows += [["Source", str(loaded.path.resolve())],
            ["Slices", f"{trace.size:,}"],
            ["Time span", format_duration(trace.span_ns)],
            ["Processes", ", ".join(processes) or "—"],
            ["Tracks / counters / flows", f"{len(trace.tracks)} / {len(trace.counters)} / {trace.flow_src.size}"],
            ["Summary tables", ", ".join(trace.tables) or "—"]]
    if trace.model_path:
        rows.append(["Model", trace.model_path])
    if loaded.counted:
        rows.append(["Op statistics", loaded.counted])
    if loaded.path.is_file():
        rows.append(["File size", f"{loaded.path.stat().st_size / 2**20:.1f} MiB"])
    rows += [[key[:1].upper() + key[1:], value] for key, value in trace.facts.items() if not key.startswith("warning")]
    return rows


def ready_rows(by_name: list[NameStat], apis: list[dict]) -> dict[str, list[list]]:
    """The per-op (``"op"``) and per-API (``"api"``) table rows, in :data:`~.stats_tab.OP_COLUMNS` and
    :data:`~.stats_tab.API_COLUMNS` order (call it in the loading job, not on the GUI thread)."""
    return {
        "op": [[s.name, s.count, s.total_us, s.avg_us, s.min_us, s.max_us, s.self_us, s.share] for s in by_name],
        "api": [[a["level"], a["name"], a["count"], a["total_us"], a["avg_us"], a["min_us"], a["max_us"]]
                for a in apis],
    }


def typed_rows(rows: list[list[str]]) -> list[list]:
    """CSV cells with numbers as numbers (so they sort and align as numbers)."""
    return [[_cell(v) for v in row] for row in rows]


def _cell(value: str):
    number = csv_tables.number(value)
    if number is None:
        return value
    return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
