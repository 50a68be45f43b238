"""Chrome trace decode rate: the compiled scanner against the page-cache read of the same file.

A trace of N complete events (as profiler_tracegen.py writes them, ~214 bytes each) is generated
in a temporary folder and deleted afterwards. Each round, interleaved, in fresh processes:

* the page-cache read rate: ``cat trace > /dev/null`` (the file is read once before, so it is in
  the page cache: the physical limit of any reader);
* the compiled scanner (numba, 2 threads): ``read_chrome_trace`` to the builder's columns, every
  event decoded, timed inside the process after ``chrome_scan.warm_up`` (numba's one-off load is
  a row of its own), wall and CPU time (all threads, and the range processes of the decoder);
* the typed msgspec decoder in 2 processes (``STUDIO_TRACE_NO_SCAN=1``, the path without numba);
* ``studio profile stats --json`` end to end (decode, sort, nesting, statistics) with each.

Rates are MB/s (10^6 bytes); each row gives the median and the range over the rounds.

    python benchmarks/bench_trace_decode.py                 # 1M events (~214 MB), 3 rounds
    python benchmarks/bench_trace_decode.py --events 10000000 --rounds 1   # ~2.2 GB
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

CHILD = """
import json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
from studio.tools.profiler import chrome_scan
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.chrome_reader import read_chrome_trace
from studio.core.jobs import run_job
used = chrome_scan.warm_up() if sys.argv[2] == "scan" else False
t1 = time.perf_counter()
r1 = resource.getrusage(resource.RUSAGE_SELF)
builder = run_job(read_chrome_trace(Path(sys.argv[1]), builder=TraceBuilder(), build=False))
t2 = time.perf_counter()
r2 = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r2.ru_utime + r2.ru_stime - r1.ru_utime - r1.ru_stime) + kids.ru_utime + kids.ru_stime
print(json.dumps({"load": t1 - t0, "decode": t2 - t1, "cpu": cpu, "slices": builder.slice_count, "scanner": used}))
"""


def child_env(scan: bool, home: str) -> dict:
    """This environment for a child reading with (``scan``) or without the compiled scanner, its
    cache in ``home`` (empty: nothing read before counts)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "STUDIO_HOME": home}
    env.pop("STUDIO_TRACE_NO_SCAN", None)
    if not scan:
        env["STUDIO_TRACE_NO_SCAN"] = "1"
    return env


def child(trace: Path, scan: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
        out = subprocess.run([sys.executable, "-c", CHILD, str(trace), "scan" if scan else "typed"],
                             env=child_env(scan, home), cwd=REPO, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def cat_time(trace: Path) -> float:
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(["cat", str(trace)], stdout=sink, check=True)
    return time.perf_counter() - start


def stats_time(trace: Path, scan: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "studio", "profile", "stats", "--json", str(trace)],
                       env=child_env(scan, home), cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def spread(values: list[float]) -> str:
    return f"median of {len(values)}, range {min(values):,.0f}–{max(values):,.0f}"


def row(figure: str, unit: str, ours: float, peer: float, peer_name: str, goal: str) -> None:
    print(json.dumps({"figure": figure, "unit": unit, "ours": round(ours, 3), "peer": round(peer, 3),
                      "peer_name": peer_name, "goal": goal}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from profiler_tracegen import generate

    with tempfile.TemporaryDirectory(prefix="studio-bench-trace-") as folder:
        trace = generate(Path(folder) / "trace.json", args.events)
        mb = trace.stat().st_size / 1e6
        cat_time(trace)  # into the page cache
        cat, scan, typed, loads, stats_scan, stats_typed, scan_cpu, typed_cpu = [], [], [], [], [], [], [], []
        for _ in range(args.rounds):
            cat.append(mb / cat_time(trace))
            fast = child(trace, scan=True)
            if not fast["scanner"]:
                raise SystemExit("numba is not installed here: install Studio with the [fast] extra")
            scan.append(mb / fast["decode"])
            scan_cpu.append(mb / fast["cpu"])
            loads.append(fast["load"])
            slow = child(trace, scan=False)
            typed.append(mb / slow["decode"])
            typed_cpu.append(mb / slow["cpu"])
            stats_scan.append(mb / stats_time(trace, scan=True))
            stats_typed.append(mb / stats_time(trace, scan=False))
        med = statistics.median
        row(f"trace decode, {args.events:,} events ({mb:,.0f} MB), compiled scanner on 2 cores "
            f"({spread(scan)} MB/s; page cache {spread(cat)} MB/s)", "MB/s", med(scan), med(cat),
            "page-cache read (cat > /dev/null)", ">= 500 MB/s")
        row(f"… the typed decoder in 2 processes, without numba ({spread(typed)} MB/s)", "MB/s", med(typed),
            med(scan), "the compiled scanner", "-")
        row(f"… MB per CPU second of all threads and processes, scanner ({spread(scan_cpu)})", "MB/s",
            med(scan_cpu), med(typed_cpu), f"the typed decoder ({spread(typed_cpu)})", "-")
        row("… numba's one-off load with the cached kernels (import to first scan), s", "s", med(loads), 0,
            "-", "-")
        row(f"profile stats end to end (decode, sort, nesting, statistics), scanner ({spread(stats_scan)} MB/s)",
            "MB/s", med(stats_scan), med(stats_typed), f"without numba ({spread(stats_typed)} MB/s)", "-")
    one, five, _ = os.getloadavg()
    row("load average (1 min, 5 min) at the end of the run", "", one, five, f"{os.cpu_count()} cores", "-")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
