"""Profiler at scale: `studio profile stats` on 1M- and 10M-event traces against the stdlib `json.load`.

Both run as fresh processes in the same run on the same files (generated as profiler_tracegen.py
does, under /tmp; the 10M-event file, ~2 GB, is deleted afterwards):

* 1M events: ``studio profile stats`` on a fresh copy (no cache) against ``json.load`` of the same
  file (goal: at most 0.4 of it);
* 10M events: ``studio profile stats`` against ten times the ``json.load`` of the 1M-event file
  (the stdlib scales linearly; loading 2 GB with it needs ~10 GB of memory) (goal: at most 0.3);
* peak memory of the whole process tree (the range decoders included), sampled every 50 ms, as
  the sum of resident sets (pages of the input mapped by several processes count once per process,
  so this overstates).

    python benchmarks/bench_profiler_scale.py            # 1M and 10M
    python benchmarks/bench_profiler_scale.py --no-10m   # 1M only
    python benchmarks/bench_profiler_scale.py --5g       # a ~5 GB trace, ours only (peak < 4 GB)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

from bench_common import run_measured  # noqa: E402 (run.py puts benchmarks/ on the path)

JSON_LOAD = "import json, sys\nwith open(sys.argv[1]) as f:\n    json.load(f)\n"
# The ceiling of any reader built on msgspec: the typed decode alone of the whole file, one process.
MSGSPEC_ALONE = ("import sys\nfrom pathlib import Path\nimport msgspec\n"
                 "from studio.tools.profiler.chrome_decode import Event\n"
                 "msgspec.json.decode(Path(sys.argv[1]).read_bytes(), type=list[Event])\n")


def stats(trace: Path) -> tuple[float, float, float]:
    """``studio profile stats`` with an empty cache (a fresh STUDIO_HOME)."""
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
        env = {**os.environ, "STUDIO_HOME": home, "PYTHONPATH": str(REPO)}
        return run_measured([sys.executable, "-m", "studio", "profile", "stats", "--json", str(trace)], env)


def json_load(trace: Path) -> tuple[float, float, float]:
    return run_measured([sys.executable, "-c", JSON_LOAD, str(trace)], dict(os.environ))


def msgspec_alone(trace: Path) -> tuple[float, float, float]:
    return run_measured([sys.executable, "-c", MSGSPEC_ALONE, str(trace)], {**os.environ, "PYTHONPATH": str(REPO)})


def load_row() -> None:
    """The machine's load when the figures were taken (they are wall times on shared cores)."""
    one, five, _ = os.getloadavg()
    print(json.dumps({"figure": "load average (1 min, 5 min) at the end of the run", "unit": "",
                      "ours": round(one, 2), "peer": round(five, 2), "peer_name": f"{os.cpu_count()} cores",
                      "goal": "-"}), flush=True)


def row(figure: str, unit: str, ours: float, peer: float, peer_name: str, goal: str) -> None:
    print(json.dumps({"figure": figure, "unit": unit, "ours": round(ours, 3), "peer": round(peer, 3),
                      "peer_name": peer_name, "goal": goal}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "studio_bench_profiler")
    parser.add_argument("--no-10m", action="store_true", help="skip the 10M-event trace (~2 GB on disk)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of ours and the peer (best kept)")
    parser.add_argument("--huge", type=int, default=0, metavar="EVENTS",
                        help="only ours, on a trace of EVENTS events (24M ~ 5 GB; the file is deleted after)")
    parser.add_argument("--5g", dest="five_gb", action="store_true",
                        help="only ours, on a ~5 GB trace (24M events; the file is deleted after)")
    args = parser.parse_args()
    from profiler_tracegen import generate

    if args.huge or args.five_gb:
        code = huge(args.dir, args.huge or 24_000_000)
        load_row()
        return code

    args.dir.mkdir(parents=True, exist_ok=True)
    one = generate(args.dir / "trace_1000000.json", 1_000_000)
    copy = args.dir / "trace_1000000_copy.json"  # a fresh copy: a new path, so nothing is cached
    shutil.copyfile(one, copy)
    ours, peer, alone = [], [], []
    try:
        for _ in range(args.rounds):
            peer.append(json_load(one))
            ours.append(stats(copy))
            alone.append(msgspec_alone(one))
    finally:
        copy.unlink(missing_ok=True)
    best_ours, best_peer = min(ours), min(peer)
    size = one.stat().st_size / 1e6
    row(f"profile stats, 1M-event trace ({size:.0f} MB), wall", "s", best_ours[0], best_peer[0],
        "json.load of the same file", "<= 0.4 of json.load")
    row("profile stats, 1M-event trace, CPU of all processes", "s", best_ours[1], best_peer[1],
        "json.load of the same file", "-")
    row("msgspec typed decode alone of the 1M-event trace, one process (the decoder's floor), wall", "s",
        min(alone)[0], best_peer[0], "json.load of the same file", "-")
    row("profile stats, 1M-event trace, peak memory (summed RSS)", "MB", max(o[2] for o in ours),
        max(p[2] for p in peer), "json.load of the same file", "< 1024 MB")
    if args.no_10m:
        load_row()
        return 0
    big = args.dir / "trace_10000000.json"
    try:
        generate(big, 10_000_000)
        wall, cpu, peak = stats(big)
        size = big.stat().st_size / 1e9
        row(f"profile stats, 10M-event trace ({size:.1f} GB), wall", "s", wall, 10 * best_peer[0],
            "10 x json.load of the 1M-event file", "<= 0.3 of it")
        row("profile stats, 10M-event trace, CPU of all processes", "s", cpu, 10 * best_peer[1],
            "10 x json.load of the 1M-event file", "-")
        row("profile stats, 10M-event trace, peak memory (summed RSS)", "MB", peak, 10 * best_peer[2],
            "10 x json.load of the 1M-event file", "< 3000 MB")
    finally:
        big.unlink(missing_ok=True)
    load_row()
    return 0


def huge(folder: Path, n: int) -> int:
    """Peak memory and wall time of ``studio profile stats`` on a multi-GB trace (ours only)."""
    from profiler_tracegen import generate

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"trace_{n}.json"
    try:
        generate(path, n)
        size = path.stat().st_size / 1e9
        wall, cpu, peak = stats(path)
        row(f"profile stats, {n / 1e6:.0f}M-event trace ({size:.1f} GB), wall", "s", wall, 0.0,
            "not run (json.load would need ~5x the file size in memory)", "-")
        row(f"profile stats, {n / 1e6:.0f}M-event trace, CPU of all processes", "s", cpu, 0.0, "not run", "-")
        row(f"profile stats, {n / 1e6:.0f}M-event trace, peak memory (summed RSS)", "MB", peak, 0.0, "not run",
            "< 4000 MB for 5 GB")
    finally:
        path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
