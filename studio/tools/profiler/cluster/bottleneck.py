"""Why a collective is slow: the rank that arrived late, and whether its host or its device held it.

What msprof-analyze's ``communication_bottleneck`` recipe does, over each rank's
``ascend_pytorch_profiler_<rank>.db`` (its TASK, CANN_API, PYTORCH_API and COMMUNICATION_OP tables)
— and, where a rank has no such db, over its text export's ``trace_view.json``, which holds the
same rows (:mod:`.bottleneck_sources`; the recipe reads db exports only):

1. The target rank's longest communication ops (default: the lowest rank, its 10 longest).
2. For each, the same op (by name) on every rank: the rank where it lasted longest arrived first and
   waited — the *fast* rank; the one where it was shortest arrived last — the *slow* rank. A
   difference under 5 % of the longest is no slow rank. The op ends together on all ranks, so
   the difference of the two ends is the clock shift between the two ranks.
3. On the slow rank, every kernel started by a PyTorch op through a CANN ``node@launch`` while the
   fast rank was already waiting: the host's gap (CANN launch start - PyTorch op end) and the
   device's (kernel start - launch end). A kernel whose device gap exceeds its host gap by over
   100 µs waited in the device's queue: when over half of them did, the slow rank was
   **device-bound** (its device was busy with earlier work), otherwise **host-bound** (the device
   ran each kernel as soon as the host launched it: the host launched late).
4. Evidence: walking back from the op, the slow and fast ranks' tasks of the same name (device
   tasks when device-bound, PyTorch ops and CANN calls when host-bound) until the two started
   within 1 ms of each other (aligned): the task whose duration differs most and the one whose
   start drifted most. When they never line up, the evidence says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.tools.profiler.cluster.bottleneck_sources import DbRank, Pending, TraceRank, rank_sources
from studio.tools.profiler.cluster.discover import RankDir

SLOW_RANK_SPREAD = 0.05          # (longest - shortest) / longest below this: no slow rank
DEVICE_GAP_NS = 100_000          # a kernel waited on the device 100 µs longer than on the host
DEVICE_BOUND_SHARE = 0.5         # over half of the kernels did: device-bound
ALIGNED_NS = 1_000_000           # two ranks' tasks starting within 1 ms of each other are aligned
TOP = 10
Source = DbRank | TraceRank


@dataclass
class Bottleneck:
    """One long communication op of the target rank and why it was long."""

    op: str
    start_ns: int
    end_ns: int
    duration_ns: int
    verdict: str                       # "host-bound", "device-bound", "no slow rank", "insufficient data"
    slow_rank: int | None = None
    fast_rank: int | None = None
    clock_shift_ns: int = 0
    launches: dict = field(default_factory=dict)     # the host/device gaps the verdict rests on
    evidence: list[dict] = field(default_factory=list)  # per level: the tasks that differ most
    aligned: bool = False
    reason: str = ""


def bottlenecks(ranks: list[RankDir], target: int | None = None, top: int = TOP,
                sources: dict[int, Source] | None = None) -> list[Bottleneck]:
    """The ``top`` longest communication ops of rank ``target`` (the lowest rank with a profiler db or
    a trace_view.json when None), each with its slow and fast rank and the cause; [] when no rank
    has either. ``sources`` are the ranks' already opened sources (:func:`.rank_sources`)."""
    sources = rank_sources(ranks) if sources is None else sources
    if not sources:
        return []
    target = min(sources) if target is None else target
    if target not in sources:
        return []
    ops = {rank: source.ops() for rank, source in sources.items()}
    longest = sorted(ops[target], key=lambda o: -(o[1] - o[0]))[:top]
    out, pending = [], None
    for start, end, name in longest:
        try:
            out.append(_analyse(name, start, end, ops, sources))
        except Pending as exc:  # a host has yet to answer for this op: every op asks its questions first
            pending = exc
    if pending is not None:
        raise pending
    return out


def _analyse(name: str, start: int, end: int, ops: dict, sources: dict) -> Bottleneck:
    found = Bottleneck(name, start, end, end - start, "insufficient data")
    same = []
    for rank, rows in ops.items():
        match = next((r for r in rows if r[2] == name), None)  # the first instance of the name, as the recipe
        if match is not None:
            same.append((match[1] - match[0], rank, match[0], match[1]))
    if len(same) < 2:
        found.reason = "the op was recorded on one rank only"
        return found
    same.sort(key=lambda s: (-s[0], s[1]))
    spread = (same[0][0] - same[-1][0]) / same[0][0]
    if spread < SLOW_RANK_SPREAD:
        found.verdict = "no slow rank"
        found.reason = f"its duration differs by {spread:.1%} between ranks (under {SLOW_RANK_SPREAD:.0%})"
        return found
    for entry in (same[0], same[-1]):  # a host is asked for both ranks' spans at once
        getattr(sources[entry[1]], "expect_span", lambda _name: None)(name)
    fast, slow = (_exact(sources[s[1]], name, s) for s in (same[0], same[-1]))
    found.fast_rank, found.slow_rank = fast[1], slow[1]
    found.clock_shift_ns = shift = fast[3] - slow[3]
    for rank, before in ((slow[1], slow[2]), (fast[1], fast[2])):  # a host is asked for all it may need at once
        getattr(sources[rank], "expect", lambda *_: None)(("Device", "PyTorch", "CANN"), before)
    launches = _launch_gaps(sources[slow[1]], fast[2] - shift, slow[3])
    if not launches["kernels"]:
        found.reason = "no kernel launched by PyTorch on the slow rank while the fast one waited"
        return found
    found.launches = launches
    device = launches["device_waited"] / launches["kernels"] > DEVICE_BOUND_SHARE
    found.verdict = "device-bound" if device else "host-bound"
    for level in ("Device",) if device else ("PyTorch", "CANN"):
        slow_rows, fast_rows = _tasks(sources[slow[1]], level, slow[2]), _tasks(sources[fast[1]], level, fast[2])
        diff, aligned, seen = align(slow_rows, fast_rows, shift)
        for source, before, looked in ((sources[slow[1]], slow[2], seen[0]), (sources[fast[1]], fast[2], seen[1])):
            # a source holding only the latest tasks (a host's answer) is asked for more when the walk reached its end
            getattr(source, "enough", lambda *_: None)(level, before, looked)
        if level in ("Device", "PyTorch"):
            found.aligned = aligned
        if aligned and diff:
            longest = max(diff, key=lambda d: d["diff_duration_ns"])
            drifted = max(diff, key=lambda d: d["diff_start_ns"])
            found.evidence.append({"level": level, "max_duration_diff": longest, "max_start_diff": drifted,
                                   "tasks_compared": len(diff)})
    found.reason = _reason(found)
    return found


def _exact(source: Source, name: str, entry: tuple) -> tuple:
    """(duration, rank, start, end) of the op on a rank a verdict rests on, as its timeline has it
    (a text export's op spans come from communication.json, its starts to 0.1 µs)."""
    span = getattr(source, "exact_span", lambda _name: None)(name)
    return entry if span is None else (span[1] - span[0], entry[1], span[0], span[1])


def _tasks(source: Source, level: str, before: int) -> list[tuple[int, int, str]]:
    return source.device_tasks(before) if level == "Device" else source.host_tasks(level, before)


def _launch_gaps(source: Source, start: int, end: int) -> dict:
    """The slow rank's kernels in [start, end]: how many waited on the device, and the median gaps."""
    rows = source.launches(start, end)
    host = sorted(r[2] - r[5] for r in rows)     # CANN launch start - PyTorch op end
    device = sorted(r[0] - r[3] for r in rows)   # kernel start - CANN launch end
    waited = sum(1 for r in rows if (r[0] - r[3]) - (r[2] - r[5]) > DEVICE_GAP_NS)
    return {"kernels": len(rows), "device_waited": waited, "window_ns": [start, end],
            "median_host_gap_ns": host[len(host) // 2] if host else 0,
            "median_device_gap_ns": device[len(device) // 2] if device else 0}


def align(slow: list[tuple[int, int, str]], fast: list[tuple[int, int, str]], shift: int
          ) -> tuple[list[dict], bool, tuple[int, int]]:
    """Walk back from the op: each slow task paired with the next fast task of its name; stop at the
    first pair starting within ``ALIGNED_NS`` (on one clock). Returns the pairs, whether the walk
    reached such a pair (the ranks were in step there), and how many of the latest slow and fast
    tasks the walk looked at."""
    slow = sorted(slow, key=lambda t: -t[0])
    fast = sorted(fast, key=lambda t: -t[0])
    out, j, looked = [], 0, 0
    for k, (start, end, name) in enumerate(slow):
        for i in range(j, len(fast)):
            looked = max(looked, i + 1)
            if fast[i][2] != name:
                continue
            j = i + 1
            diff_start = start - fast[i][0] + shift
            out.append({"task": name, "start_ns": start, "duration_ns": end - start,
                        "diff_start_ns": diff_start, "diff_duration_ns": (end - start) - (fast[i][1] - fast[i][0])})
            if diff_start < ALIGNED_NS:
                return out, True, (k + 1, looked)
            break
        else:
            looked = len(fast)  # no task of the name left: the walk looked at every fast task
    return out, False, (len(slow), looked)


def _reason(found: Bottleneck) -> str:
    gaps = found.launches
    medians = (f"median gaps: host (PyTorch op end to CANN launch) {gaps['median_host_gap_ns'] / 1000:,.1f} µs, "
               f"device (launch end to kernel start) {gaps['median_device_gap_ns'] / 1000:,.1f} µs")
    share = f"{gaps['device_waited']} of {gaps['kernels']} kernels"
    window = f"launched on rank {found.slow_rank} while rank {found.fast_rank} waited in the op"
    if found.verdict == "device-bound":
        head = (f"rank {found.slow_rank} arrived late, device-bound: {share} {window} waited over 100 µs longer on "
                f"the device than on the host ({medians})")
    else:
        head = (f"rank {found.slow_rank} arrived late, host-bound: only {share} {window} waited over 100 µs longer "
                f"on the device than on the host — the device kept up, the launches came late ({medians})")
    if not found.evidence:
        return head + "; the two ranks' tasks never line up going back from the op (no task-level evidence)"
    parts = [f"{e['level']}: {e['max_duration_diff']['task']} took "
             f"{e['max_duration_diff']['diff_duration_ns'] / 1000:,.1f} µs longer, "
             f"{e['max_start_diff']['task']} started {e['max_start_diff']['diff_start_ns'] / 1000:,.1f} µs later"
             for e in found.evidence]
    return head + "; " + "; ".join(parts)
