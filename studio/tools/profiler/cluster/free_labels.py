"""Each free gap of a rank's device timeline labelled with its cause (msprof-analyze's
``free_analysis`` rules, for every gap).

1. **device task running** / **memcpy running** — some other device task (a memcpy, an event
   record …) started and ended inside the gap: the device was not idle all along. The longest
   stretch left free once those tasks are taken out is given.
2. Otherwise the gap is explained by the tasks either side of it — the last to end before it
   (*prev*) and the first to start after it (*next*) — and their dispatch chain (PyTorch op ->
   CANN launch -> device task):
   - **python idle** — the time from a PyTorch op's end to its CANN launch grew by under 50 µs from
     prev to next: the launch layer kept pace; the framework dispatched nothing for the gap
     (``python_idle`` = next op's end - prev op's end);
   - **CANN launch gap** — that time grew by 50 µs or more, and the longest of the two launches'
     durations and the time between them is the time between them (next launch start - prev
     launch end): the CANN layer waited between two ``node@launch`` calls;
   - **CANN long launch** — as above, but one launch itself took longest.
3. **unexplained** — no task before or after the gap, or one of them has no PyTorch op or no CANN
   launch (not dispatched by the framework): the recipe skips these too.

Text exports are labelled the same way from ``trace_view.json`` (which the recipe cannot read).
"""

from __future__ import annotations

import gc
from collections import Counter

import numpy as np

from studio.tools.profiler.cluster.free_sources import DeviceTimeline

DISPATCH_GROWTH_NS = 50_000     # the recipe's DIFF_WAIT_THRESHOLD_NS
LABELS = ("python idle", "CANN launch gap", "CANN long launch", "memcpy running", "device task running",
          "unexplained")


def label_gaps(t: DeviceTimeline) -> list[dict]:
    """Each gap between the timeline's busy stretches, labelled (see the module's description).

    The dispatch rules run on whole columns (a rank of 1M tasks has hundreds of thousands of gaps);
    only gaps with device tasks inside them are walked one by one."""
    starts, ends = t.busy_end[:-1], t.busy_start[1:]
    origin = int(t.busy_start[0]) if len(t.busy_start) else 0
    order_end = np.argsort(t.task_end, kind="stable")
    by_start = np.argsort(t.task_ts, kind="stable")
    ts_sorted = t.task_ts[by_start]
    lo, hi = np.searchsorted(ts_sorted, starts, "right"), np.searchsorted(ts_sorted, ends, "left")
    inside: dict[int, list[int]] = {}
    for g in np.nonzero(hi > lo)[0].tolist():  # tasks starting in the gap: those ending in it too
        tasks = [i for i in by_start[lo[g]:hi[g]].tolist() if t.task_end[i] < ends[g]]
        if tasks:
            inside[g] = tasks
    p = np.searchsorted(t.task_end[order_end], starts, "right") - 1   # the last task to end before
    n = hi                                                             # the first task to start after
    has_prev, has_next = p >= 0, n < len(by_start)
    prev = np.where(has_prev, order_end[np.clip(p, 0, None)], 0) if len(order_end) else np.zeros(len(p), np.int64)
    nxt = np.where(has_next, by_start[np.clip(n, None, len(by_start) - 1)], 0) if len(by_start) else prev
    rules = _dispatch_columns(t, prev, nxt, has_prev & has_next)
    collecting = gc.isenabled()
    gc.disable()  # hundreds of thousands of new dicts: the collector would walk them again and again (2x)
    try:
        return _gap_rows(t, starts, ends, origin, inside, rules)
    finally:
        if collecting:
            gc.enable()


def _gap_rows(t: DeviceTimeline, starts, ends, origin: int, inside: dict, rules: dict) -> list[dict]:
    out = []
    for g, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
        gap = {"start_ns": s, "end_ns": e, "offset_us": (s - origin) / 1000, "duration_us": (e - s) / 1000,
               "label": "unexplained", "reason": "", "python_idle_us": None, "cann_idle_us": None,
               "device_tasks": {}, "remaining_free_us": None}
        if g in inside:
            _device_running(gap, t, inside[g], s, e)
        else:
            _dispatch(gap, rules, g)
        out.append(gap)
    return out


def _dispatch_columns(t: DeviceTimeline, prev: np.ndarray, nxt: np.ndarray, both: np.ndarray) -> dict:
    """The dispatch rule's figures for every gap at once (ns), from the tasks either side of it."""
    python_idle = t.py_end[nxt] - t.py_end[prev]
    growth = (t.cann_ts[nxt] - t.py_end[nxt]) - (t.cann_ts[prev] - t.py_end[prev])  # launch lag, after - before
    launch = np.maximum(t.cann_end[prev] - t.cann_ts[prev], t.cann_end[nxt] - t.cann_ts[nxt])
    between = t.cann_ts[nxt] - t.cann_end[prev]
    columns = {"both": both, "py": both & t.has_py[prev] & t.has_py[nxt],
               "cann": both & t.has_cann[prev] & t.has_cann[nxt], "python_idle": python_idle,
               "cann_idle": t.cann_end[nxt] - t.cann_end[prev], "growth": growth, "launch": launch, "between": between}
    return {k: v.tolist() for k, v in columns.items()}  # Python values: a numpy scalar costs ~10x to read


def _device_running(gap: dict, t: DeviceTimeline, inside: list[int], s: int, e: int) -> None:
    counts = Counter(t.task_type[i] for i in inside)
    gap["device_tasks"] = dict(counts.most_common())
    spans = sorted((int(t.task_ts[i]), int(t.task_end[i])) for i in inside)
    longest, cursor = 0, s
    for a, b in spans:  # the gap minus the tasks inside it
        if a > cursor:
            longest = max(longest, a - cursor)
        cursor = max(cursor, b)
    longest = max(longest, e - cursor)
    gap["remaining_free_us"] = longest / 1000
    memcpy = any("MEMCPY" in str(k).upper() for k in counts)
    gap["label"] = "memcpy running" if memcpy else "device task running"
    kinds = ", ".join(f"{v} {k}" for k, v in gap["device_tasks"].items())
    gap["reason"] = f"the device ran {kinds} in the gap; the longest stretch left free is {longest / 1000:,.3f} µs"


def _dispatch(gap: dict, rules: dict, g: int) -> None:
    if not rules["both"][g]:
        gap["reason"] = "no device task before or after the gap"
        return
    if not rules["py"][g]:
        gap["reason"] = "a task either side of the gap was not dispatched by a PyTorch op"
        return
    if not rules["cann"][g]:
        gap["reason"] = "a task either side of the gap has no CANN launch"
        return
    python_idle, growth = rules["python_idle"][g], rules["growth"][g]
    gap["python_idle_us"] = python_idle / 1000
    gap["cann_idle_us"] = rules["cann_idle"][g] / 1000
    if growth < DISPATCH_GROWTH_NS:
        gap["label"] = "python idle"
        if python_idle == 0:  # one op launched both tasks: the host spent the gap inside that op
            gap["reason"] = ("the tasks either side came from one PyTorch op and its CANN launches kept pace: the "
                             "framework was busy inside that op and dispatched nothing else")
        else:
            gap["reason"] = (f"nothing dispatched from the framework for {python_idle / 1000:,.3f} µs (between the "
                             f"ends of the PyTorch ops either side); the CANN launches kept pace")
        return
    launch, between = rules["launch"][g], rules["between"][g]
    if between >= launch:  # the recipe's max(launches, between) == between
        gap["label"] = "CANN launch gap"
        gap["reason"] = (f"{between / 1000:,.3f} µs between two CANN launches; the launch lagged its PyTorch op "
                         f"{growth / 1000:,.3f} µs more than before the gap")
    else:
        gap["label"] = "CANN long launch"
        gap["reason"] = (f"a CANN launch took {launch / 1000:,.3f} µs; the launch lagged its PyTorch op "
                         f"{growth / 1000:,.3f} µs more than before the gap")
