"""Database sets by window: a 16-rank PyTorch-NPU db set opened without loading what is not shown.

The set is synthesised from the real 2-rank db export's schema (db_set_gen.py: each rank's step
repeated until the file reaches its share), measured, then deleted. Each figure is taken in a
fresh process with a fresh STUDIO_HOME (no cache) unless it says "cache built"; peak memory is the
summed RSS of the whole process tree, sampled every 50 ms.

* ``studio profile cluster DIR --json`` against msprof-analyze ``cluster`` on the same set (its
  output in a folder of its own) — the peer in the same run;
* one rank's database in the Profiler: the sampled first look (device tasks read through the
  file's own time index while the cache is built); the first frame (query cache built, whole session as
  per-bucket summaries, painted on a TimelineView) against today's full reader (every event read,
  levels of detail built, painted), time and peak memory; and from the cache (a second open);
* every rank's database opened by window (the 16 caches built, one after the other) and then from
  the caches: the first frame of all 16, one after the other, and the all-ranks timeline (every
  rank's lanes joined, as Cluster -> all ranks shows them) painted once;
* the slowest window query while zooming from the whole session down to 1 ms (cache built);
* the same first frames and all-ranks timeline from cold caches: every file of the set and of the
  caches evicted from the page cache first (``posix_fadvise(DONTNEED)``, no root needed), as when
  a big set and its caches no longer fit in memory, with the bytes the process read from disk.

    python benchmarks/bench_db_window.py             # ~1.5 GB set (16 x ~95 MB)
    python benchmarks/bench_db_window.py --gb 0.3    # a smaller quick set
    python benchmarks/bench_db_window.py --stretch   # the ~20 GB set (16 x 1.25 GB)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from bench_profiler_scale import row, run_measured  # noqa: E402
from db_set_gen import synthesize  # noqa: E402

FIRST_FRAME = r"""
import json, sys, time
from pathlib import Path
from PySide6.QtWidgets import QApplication
app = QApplication([])
from studio.ui.panels.profiler.timeline import TimelineView
view = TimelineView(); view.resize(1600, 900)

def read_bytes():  # what this process has read from disk (Linux; 0 elsewhere)
    try:
        return int(next(l for l in open("/proc/self/io") if l.startswith("read_bytes")).split()[1])
    except OSError:
        return 0

t, disk = time.perf_counter(), read_bytes()
paths = [Path(p) for p in sys.argv[2:]]
if sys.argv[1] == "ranks":  # the set's folder: every rank's lanes on one timeline, db-only ranks by window
    from studio.core.jobs import run_job
    from studio.tools.profiler.cluster.progressive import open_rank_timelines_progressive
    trace = run_job(open_rank_timelines_progressive(paths[0], lambda *_: None, workers=1, windows=[]))
    paths = []
    view.set_trace(trace)
    view.grab()
for path in paths:
    if sys.argv[1] == "preview":
        from studio.tools.profiler.db_preview import preview_trace
        trace = preview_trace(path)
    elif sys.argv[1] == "full":
        from studio.core.jobs import run_job
        from studio.tools.profiler.db_reader import read_database
        from studio.tools.profiler.lod import build_lod
        trace = run_job(read_database(path))
        trace.lod = build_lod(trace.start, trace.dur, trace.track, trace.depth)
    else:
        from studio.tools.profiler.db_window import open_window
        trace = open_window(path).window_trace(pixels=1600)
    view.set_trace(trace)
    view.grab()
import os
Path(os.environ["BENCH_OUT"]).write_text(json.dumps({"s": time.perf_counter() - t, "slices": int(trace.size),
                                                   "read_mb": (read_bytes() - disk) / 1e6}))
"""

ZOOM = r"""
import json, sys, time
from pathlib import Path
from studio.tools.profiler.db_window import open_window
window = open_window(Path(sys.argv[1]))
worst, width, t0 = 0.0, window.t_last - window.t_first, window.t_first
while width > 1_000_000:
    t = time.perf_counter()
    trace = window.window_trace(t0, t0 + width, 1600)
    worst = max(worst, time.perf_counter() - t)
    t0 += width // 4
    width //= 3
import os
Path(os.environ["BENCH_OUT"]).write_text(json.dumps({"worst_s": worst}))
"""


def fresh(command: list[str], home: str | None = None) -> tuple[float, float, float, str]:
    """``command`` in a fresh process (its own STUDIO_HOME unless given): wall, CPU, peak MB, and
    what it wrote to $BENCH_OUT."""
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as own:
        out = Path(own) / "out.json"
        env = {**os.environ, "STUDIO_HOME": home or own, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen",
               "BENCH_OUT": str(out)}
        wall, cpu, peak = run_measured(command, env)
        return wall, cpu, peak, out.read_text() if out.is_file() else ""


def evict(*folders: Path) -> None:
    """Drop every file under ``folders`` from the page cache (its next read comes from disk)."""
    os.sync()  # DONTNEED leaves dirty pages: the caches just written are flushed first
    for folder in folders:
        for path in Path(folder).rglob("*"):
            if path.is_file():
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)


def msprof_analyze(folder: Path) -> tuple[float, float, float] | None:
    tool = shutil.which("msprof-analyze") or str(Path(sys.executable).with_name("msprof-analyze"))
    if not Path(tool).exists():
        print("# msprof-analyze not installed: its row is skipped", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory(prefix="studio-bench-ma-") as out:
        return run_measured([tool, "cluster", "-d", str(folder), "-o", out], dict(os.environ))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "studio_bench_dbset")
    parser.add_argument("--gb", type=float, default=1.5, help="size of the set (default 1.5 GB)")
    parser.add_argument("--stretch", action="store_true", help="the ~20 GB set (16 x 1.25 GB)")
    args = parser.parse_args()
    gb = 20.0 if args.stretch else args.gb
    shutil.rmtree(args.dir, ignore_errors=True)
    try:
        made = synthesize(args.dir, int(gb * 1e9))
        label = f"{made['bytes'] / 1e9:.1f} GB db set"
        print(f"# synthesised {label} in {made['total_s']:.1f} s ({made['steps_per_rank']} steps per rank)",
              file=sys.stderr)
        dbs = sorted(args.dir.rglob("ascend_pytorch_profiler_*.db"))
        ours = fresh([sys.executable, "-m", "studio", "profile", "cluster", "--json", str(args.dir)])
        peer = msprof_analyze(args.dir)
        row(f"profile cluster, {label}", "s", ours[0], peer[0] if peer else 0, "msprof-analyze cluster", "<= 30 s")
        row(f"profile cluster, {label}: peak memory", "MB", ours[2], peer[2] if peer else 0,
            "msprof-analyze cluster", "< 4 GB")
        one = [sys.executable, "-c", FIRST_FRAME]
        full = fresh([*one, "full", str(dbs[0])])
        preview = fresh([*one, "preview", str(dbs[0])])
        with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
            cold = fresh([*one, "window", str(dbs[0])], home)
            warm = fresh([*one, "window", str(dbs[0])], home)
            zoom = fresh([sys.executable, "-c", ZOOM, str(dbs[0])], home)
        size = dbs[0].stat().st_size / 1e6
        full_s, cold_s, warm_s, preview_s = (json.loads(x[3])["s"] for x in (full, cold, warm, preview))
        row(f"one rank's db ({size:.0f} MB): first look (sampled preview) while the cache builds", "s", preview_s,
            full_s, "today's full read", "<= 2 s")
        row(f"one rank's db ({size:.0f} MB): first frame, cache built", "s", cold_s, full_s,
            "today's full read", "<= 2 s")
        row(f"one rank's db ({size:.0f} MB): first frame from the cache", "s", warm_s, full_s,
            "today's full read", "<= 2 s")
        row(f"one rank's db ({size:.0f} MB): peak memory, cache built", "MB", cold[2], full[2],
            "today's full read", "< 4 GB")
        row("one rank's db: slowest window query zooming to 1 ms", "s", json.loads(zoom[3])["worst_s"], 0,
            "-", "< 0.05 s")
        with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
            every = fresh([*one, "window", *map(str, dbs)], home)
            again = fresh([*one, "window", *map(str, dbs)], home)
            joined = fresh([*one, "ranks", str(args.dir)], home)
            evict(args.dir, Path(home))
            frames_cold = fresh([*one, "window", *map(str, dbs)], home)
            evict(args.dir, Path(home))
            joined_cold = fresh([*one, "ranks", str(args.dir)], home)
        row(f"all {len(dbs)} ranks by window ({label}): caches built", "s", json.loads(every[3])["s"], 0, "-", "")
        row(f"all {len(dbs)} ranks by window: first frame from the caches", "s", json.loads(again[3])["s"], 0, "-", "<= 2 s")
        row(f"all {len(dbs)} ranks by window: peak memory, caches built", "MB", every[2], 0, "-", "< 4 GB")
        row(f"all {len(dbs)} ranks' lanes on one timeline (Cluster -> all ranks) from the caches", "s",
            json.loads(joined[3])["s"], 0, "-", "<= 2 s")
        for figure, run in (("first frames, one after the other", frames_cold), ("lanes on one timeline", joined_cold)):
            done = json.loads(run[3])
            row(f"all {len(dbs)} ranks' {figure}, from cold caches (evicted from the page cache)", "s", done["s"], 0,
                "-", "<= 2 s")
            row(f"all {len(dbs)} ranks' {figure}, from cold caches: read from disk", "MB", done["read_mb"], 0, "-", "")
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
