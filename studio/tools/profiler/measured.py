"""Which part of a profile is the measurement: the measured iterations, without the warm-ups.

A local run (``studio profile run``) starts with warm-ups whose first runs allocate and plan and
can take many times a steady run; counting them moves the op shares (a classifier's top op read
25 % with them and 11 % without). So statistics, shares, the graph overlay, comparisons and the
advisor look at the measured iterations only, by default, and say so (:func:`measured`). The
iterations are known from Studio's ``iteration N`` ranges (the warm-ups are ``warm-up N``), else
ONNX Runtime's ``model_run`` slices, PyTorch's ``ProfilerStep#N`` or a benchmark's timed loops.

A local run's ``studio_profile.json`` also holds its latencies with the profiler off
(:func:`latency_samples`), the samples a comparison of two saved profiles uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.safe_read import load_json
from studio.tools.profiler.model import Trace

_ITERATION = re.compile(r"^iteration \d+$")
_WARMUP = re.compile(r"^warm-up \d+$")
_STEP = re.compile(r"^ProfilerStep#\d+$")
LOCAL_SUMMARY = "studio_profile.json"


@dataclass
class Iterations:
    """How many measured iterations a profile holds, where they are, and their latency."""

    count: int
    window: tuple[int, int] | None  # (start, end) ns of the measured iterations; None = whole trace
    latency_ms: float | None  # mean per iteration
    how: str  # where the count comes from, for the report
    warmups: int = 0  # warm-up iterations the trace holds outside ``window``
    windows: np.ndarray | None = None  # (count, 2) start, end ns of each measured iteration, in time order


@dataclass
class Measured:
    """The slices to count: ``mask`` (None = all) and a sentence saying which."""

    mask: np.ndarray | None
    iterations: Iterations
    note: str
    warmup_left_out: bool = False

    def __json__(self) -> dict:
        """The ``measured`` entry of ``studio profile stats --json`` (:func:`studio.core.serial.to_json`)."""
        window = self.iterations.window
        return {"iterations": self.iterations.count, "how": self.iterations.how,
                "warmups": self.iterations.warmups, "warmup_left_out": self.warmup_left_out,
                "window_us": [window[0] / 1e3, window[1] / 1e3] if window else None, "note": self.note}


def iterations(trace: Trace) -> Iterations:
    """The measured iterations of a profile: Studio's ``iteration N`` ranges (warm-ups left out),
    else ONNX Runtime's ``model_run`` slices, else PyTorch's ``ProfilerStep#N``; one otherwise."""
    measured = named(trace, _ITERATION)
    runs = named(trace, re.compile(r"^model_run$"))
    if measured.size:
        warmups = int(named(trace, _WARMUP).size)
        latency = float(np.asarray(trace.dur)[measured].mean()) / 1e6
        if runs.size >= measured.size:  # ORT's own runs, on ORT's clock: the last ones are the measured
            runs = _in_order(trace, runs)[-measured.size:]
            return Iterations(int(measured.size), _span(trace, runs), latency, "measured iterations, warm-ups left out",
                              warmups, _windows(trace, runs))
        measured = _in_order(trace, measured)
        return Iterations(int(measured.size), _span(trace, measured), latency, "measured iterations", warmups,
                          _windows(trace, measured))
    loops = named(trace, re.compile(r"^inference$")) if "benchmark" in trace.facts else np.zeros(0, np.int64)
    for found, how in ((runs, "model_run slices"), (named(trace, _STEP), "profiler steps"), (loops, "timed loops")):
        if found.size:
            found = _in_order(trace, found)
            return Iterations(int(found.size), None, float(np.asarray(trace.dur)[found].mean()) / 1e6, how, 0,
                              _windows(trace, found))
    return Iterations(1, None, None, "no iteration marks: whole profile")


def measured(trace: Trace, include_warmup: bool = False) -> Measured:
    """The slices statistics count: those of the measured iterations (warm-ups left out) when the
    profile marks them, unless ``include_warmup``; every slice otherwise."""
    its = iterations(trace)
    if its.window is None or not its.warmups:
        return Measured(None, its, f"all slices counted ({its.how})")
    if include_warmup:
        return Measured(None, its, f"all slices counted, the {its.warmups} warm-up(s) included (--include-warmup)")
    return Measured(window_mask(trace, its.window), its,
                    f"over the {its.count} measured iterations; the {its.warmups} warm-up(s) left out "
                    "(--include-warmup counts them)", True)


def window_mask(trace: Trace, window: tuple[int, int] | None) -> np.ndarray | None:
    """True for the slices that start inside ``window`` (None: no window, all slices)."""
    if window is None:
        return None
    start = np.asarray(trace.start)
    return (start >= window[0]) & (start < window[1])


def named(trace: Trace, pattern: re.Pattern) -> np.ndarray:
    """Indices of the slices whose name matches ``pattern``."""
    ids = np.array([i for i, name in enumerate(trace.names) if pattern.match(name)], dtype=np.int32)
    return np.flatnonzero(np.isin(np.asarray(trace.name), ids)) if ids.size else np.zeros(0, np.int64)


def _in_order(trace: Trace, indices: np.ndarray) -> np.ndarray:
    return indices[np.argsort(np.asarray(trace.start)[indices], kind="stable")]


def _windows(trace: Trace, indices: np.ndarray) -> np.ndarray:
    start = np.asarray(trace.start)[indices].astype(np.int64)
    return np.stack([start, start + np.asarray(trace.dur)[indices].astype(np.int64)], axis=1)


def _span(trace: Trace, indices: np.ndarray) -> tuple[int, int]:
    start = np.asarray(trace.start)[indices]
    return int(start.min()), int((start + np.asarray(trace.dur)[indices]).max())


def local_summary(trace: Trace) -> dict:
    """The ``studio_profile.json`` beside a local run's trace (its latencies, iterations, inputs),
    or {} for any other profile."""
    source = Path(trace.source) if trace.source else None
    for folder in ([source] if source and source.is_dir() else []) + ([source.parent] if source else []):
        path = folder / LOCAL_SUMMARY
        if path.is_file():
            try:
                data = load_json(path, "profile summary")
            except (OSError, ValueError, UserError):
                return {}
            return data if isinstance(data, dict) else {}
    return {}


def latency_samples(trace: Trace, profiled: bool = False) -> tuple[list[float], str]:
    """One latency per measured iteration (ms) and what they are: a local run's timed runs with
    the profiler off (``profiled``: its profiled runs), a benchmark's loops, else the durations of
    the iteration slices (``iteration N``, ``model_run``, ``ProfilerStep#N``)."""
    local = local_summary(trace)
    bench = local.get("benchmark") if isinstance(local.get("benchmark"), dict) else None
    if bench and bench.get("latencies_ms"):
        return [float(x) for x in bench["latencies_ms"]], "the benchmark's timed loops"
    if local.get("profiled_latencies_ms") and not profiled:
        return [float(x) for x in local.get("latencies_ms") or []], "runs timed with the profiler off"
    if local.get("profiled_latencies_ms"):
        return [float(x) for x in local["profiled_latencies_ms"]], "profiled runs"
    if local.get("latencies_ms"):  # written before the timing phase existed: profiled runs
        return [float(x) for x in local["latencies_ms"]], "profiled runs"
    for pattern, what in ((_ITERATION, "iteration ranges"), (re.compile(r"^model_run$"), "model_run slices"),
                          (_STEP, "profiler steps"), (re.compile(r"^inference$"), "timed loops")):
        found = named(trace, pattern)
        if found.size:
            found = found[np.argsort(np.asarray(trace.start)[found], kind="stable")]
            return [float(d) / 1e6 for d in np.asarray(trace.dur)[found]], what
    return [], "no iteration marks"
