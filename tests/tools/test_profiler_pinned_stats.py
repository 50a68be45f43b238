"""The statistics of the real PyTorch-on-NPU timeline, pinned against an independent computation.

The reference is a plain ``json.load`` and Python sums (timestamps given as decimal strings are
converted exactly with ``Decimal``), so any change of the fast decoder, of the range-parallel
reader or of the numpy group-bys that alters a single count or nanosecond fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from studio.core.jobs import run_job
from studio.tools.profiler import stats
from studio.tools.profiler.chrome_reader import read_chrome_trace

REPO_ROOT = Path(__file__).resolve().parents[2]


def _ns(value) -> int:
    """Microseconds (number or decimal string) to ns, as a trace means them."""
    if isinstance(value, str):
        return int(Decimal(value) * 1000)
    return round(float(value) * 1000.0)


def reference(path) -> tuple[dict[str, list[int]], dict[str, float], int]:
    """Per name [count, total ns, min ns, max ns] of the complete events; per counter the sum of
    its values; the earliest timestamp (ns). Plain Python over ``json.load``."""
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    events = document if isinstance(document, list) else document["traceEvents"]
    per_name: dict[str, list[int]] = {}
    counters: dict[str, float] = defaultdict(float)
    first = None
    for event in events:
        if "ts" not in event:
            continue
        ts = _ns(event["ts"])
        first = ts if first is None else min(first, ts)
        if event["ph"] == "X":
            dur = max(0, _ns(event.get("dur", 0)))
            row = per_name.setdefault(event["name"], [0, 0, dur, dur])
            row[0] += 1
            row[1] += dur
            row[2] = min(row[2], dur)
            row[3] = max(row[3], dur)
        elif event["ph"] == "C":
            args = event.get("args", {})
            # an id among the args (Acc PMU's acc_id) names the series; it is not a value
            unit = "".join(f" {k} {v}" for k, v in args.items() if k.endswith("_id"))
            for key, value in args.items():
                if not key.endswith("_id"):
                    counters[f"{event['name']}{unit}/{key}"] += value
    return per_name, dict(counters), first


def ours(trace) -> tuple[dict[str, list[int]], dict[str, float]]:
    per_name: dict[str, list[int]] = {}
    for i in range(trace.size):
        name, dur = trace.names[int(trace.name[i])], int(trace.dur[i])
        row = per_name.setdefault(name, [0, 0, dur, dur])
        row[0] += 1
        row[1] += dur
        row[2] = min(row[2], dur)
        row[3] = max(row[3], dur)
    return per_name, {c.name: float(c.values.sum()) for c in trace.counters}


@pytest.mark.parametrize("ranges,chunk_bytes", [(1, 16 << 20), (1, 4096), (3, 4096), (7, 1024)])
def test_real_timeline_stats_match_plain_json(ascend_fixtures, ranges, chunk_bytes):
    path = ascend_fixtures / "pytorch_npu" / "trace_view.json"
    expected, expected_counters, first = reference(path)
    trace = run_job(read_chrome_trace(path, ranges=ranges, chunk_bytes=chunk_bytes))
    got, got_counters = ours(trace)
    assert sum(row[0] for row in expected.values()) == 4384  # the fixture's complete events
    assert got == expected
    assert trace.origin_ns == first
    # One counter per argument; its values sum to the same (a name may be "<counter> (<arg>)").
    assert sorted(got_counters.values()) == pytest.approx(sorted(expected_counters.values()), rel=1e-12)

    # The op table (``by_name``, numpy group-bys) agrees with the plain sums for every op it lists.
    rows = stats.by_name(trace)
    assert rows
    for row in rows:
        count, total, low, high = expected[row.name]
        assert (row.count, row.total_us, row.min_us, row.max_us) == (count, total / 1e3, low / 1e3, high / 1e3)
    assert sum(r.share for r in rows) == pytest.approx(1.0)


def test_cli_stats_match_plain_json(ascend_fixtures, tmp_path):
    """``studio profile stats --json`` (a fresh process, no cache) prints the same totals."""
    path = ascend_fixtures / "pytorch_npu" / "trace_view.json"
    expected, _, _ = reference(path)
    out = subprocess.run([sys.executable, "-m", "studio", "profile", "stats", "--json", str(path)],
                         capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    printed = json.loads(out.stdout)
    assert printed["by_name"]
    for row in printed["by_name"] + printed["wrappers"]:
        count, total, _, _ = expected[row["name"]]
        assert row["count"] == count
        assert row["total_us"] == pytest.approx(total / 1e3, abs=1e-9)
    listed = {row["name"] for row in printed["by_name"] + printed["wrappers"]}
    assert listed == set(expected)
