"""Helpers the benchmark scripts share: print one result row, time a function.

Not a benchmark itself (run.py runs ``bench_*.py`` scripts that print rows; this one prints none).
"""

from __future__ import annotations

import json
import statistics
import time


def emit(figure: str, unit: str, ours: float, peer: float, peer_name: str, goal: str) -> None:
    """Print one result row in the format run.py reads."""
    print(json.dumps({"figure": figure, "unit": unit, "ours": round(ours, 5), "peer": round(peer, 5),
                      "peer_name": peer_name, "goal": goal}), flush=True)


def median_time(fn, runs: int) -> float:
    """Median wall time of ``runs`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
