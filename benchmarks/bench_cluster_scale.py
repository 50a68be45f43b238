"""Cluster at scale: 16 ranks x 1M events, synthesized from the real 2-rank PyTorch-NPU export.

Each synthetic rank is a real rank (rank 0 or 1 of fixtures/ascend/real/cluster_pytorch/
msinsight_text_2rank_level2) whose timeline is repeated, step after step, to ``--events`` events
(the events' times moved by the step's span; flow ids kept apart per step), with one row per step
in step_trace_time.csv and one step entry per step in communication(_matrix).json. Ranks of the
same base share their trace_view.json through a hard link (one copy on disk, 16 folders to read).
Measured, each in a fresh process:

* ``studio profile cluster DIR --json`` with an empty cache, against 16 x ``json.load`` of one
  rank's trace_view.json (goal: at most 0.3 of it, and < 4 GB peak of the process tree);
* the first frame of the rank lanes (every rank's timeline on one TimelineView): cold (every rank
  decoded, in parallel on every core, into its columnar cache) and again from those caches
  (goal: < 5 s), and the slowest frame while zooming (goal: no stall > 50 ms);
* the GUI's cold open in the Profiler panel, the ranks shown as they come: the first frame (each
  rank's step summary; goal: < 5 s), every rank decoded and swapped in, and the longest the GUI
  thread was held meanwhile (a 5 ms timer's longest gap; goal: < 50 ms).

* with ``--hosts``: the same 16 ranks left on two hosts (8 rank folders each, two host entries on
  the loopback sshd the tests use), ``studio profile cluster --on node1:DIR --on node2:DIR`` (each
  host's engine reads its ranks in place, both at once, only the report's parts come back) against
  downloading both folders first (Studio's own tar stream, both at once) and reading them here.

    python benchmarks/bench_cluster_scale.py             # 16 ranks x 1M events
    python benchmarks/bench_cluster_scale.py --quick     # 16 ranks x 50k events (a smoke test)
    python benchmarks/bench_cluster_scale.py --hosts     # also the ranks left on two hosts
"""

from __future__ import annotations

import argparse
import json
import math
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
from bench_common import run_measured  # noqa: E402
from bench_profiler_scale import JSON_LOAD, load_row, row  # noqa: E402

REAL = "ascend/real/cluster_pytorch/msinsight_text_2rank_level2/level2"
RANKS = 16
SUMMARY_FILES = ("api_statistic.csv", "op_statistic.csv", "kernel_details.csv")

LANES = r"""
import json, sys, time
from PySide6.QtWidgets import QApplication
app = QApplication([])
from studio.core.jobs import run_job
from studio.tools.profiler.cluster.timeline import open_rank_timelines
from studio.ui.panels.profiler.timeline import TimelineView
view = TimelineView(); view.resize(1600, 900)
t = time.perf_counter()
trace = run_job(open_rank_timelines(sys.argv[1]))
opened = time.perf_counter() - t
view.set_trace(trace)
t1 = time.perf_counter(); view.grab(); first = time.perf_counter() - t1
frames = []
span = trace.span_ns
for zoom in (1.0, 0.1, 0.01, 1e-3, 1e-4):
    for centre in (0.2, 0.5, 0.8):
        mid = span * centre
        view.set_window(mid - span * zoom / 2, mid + span * zoom / 2)
        view.grab()
        frames.append(view.last_frame_ms)
with open(sys.argv[2], "w") as out:
    json.dump({"open": opened, "first_frame": first, "frames": frames, "slices": trace.size,
               "tracks": len(trace.tracks)}, out)
"""

def timed_tail(call: str) -> str:
    """The end of a panel script: its 5 ms timer (``tick``) started, ``call`` made at time ``t``, the
    event loop run until the script quits it, and ``out`` written to the file ``sys.argv[2]``."""
    return ("timer = QTimer(); timer.setInterval(5); timer.timeout.connect(tick); timer.start()\n"
            f"t = time.perf_counter()\n{call}\napp.exec()\n"
            'with open(sys.argv[2], "w") as handle:\n    json.dump(out, handle)\n')


# The GUI's own path, cold: the Profiler panel asks for every rank's lanes (its job thread joins
# what there is, a worker process decodes the ranks); the window swaps each joined trace in. A
# timer on the GUI thread ticks every 5 ms: the longest gap between ticks is the worst stall. Each
# swap's own paint (the one its update posts, as on screen) falls inside the gaps; the paints are
# counted so that a run without them cannot pass for a fast one.
PROGRESSIVE = r"""
import json, sys, time
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
from studio.ui.jobs import JobRunner
from studio.ui.panels.profiler.panel import ProfilerPanel
runner = JobRunner()
panel = ProfilerPanel(runner); panel.resize(1600, 900); panel.show()
out = {"shown": [], "stall_ms": 0.0}
last = [None]
def tick():
    now = time.perf_counter()
    if last[0] is not None and out["shown"]:  # from the first frame on: the progressive fill
        out["stall_ms"] = max(out["stall_ms"], (now - last[0]) * 1000)
    last[0] = now
    profiles = panel.state.profiles
    if profiles and profiles[0].label.endswith("(all ranks)") and "all" not in out:
        panel.timeline.grab()
        out["all"] = time.perf_counter() - t
        out["slices"] = profiles[0].trace.size
        app.quit()
class Paints(QObject):  # counts the timeline's own paints: each swap must be painted, once
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint:
            out["paints"] = out.get("paints", 0) + 1
        return False
paints = Paints(); panel.timeline.installEventFilter(paints)
def frame(label):  # the swap's own paint (posted by its update) falls in the stall measured
    out["shown"].append([time.perf_counter() - t, label])
panel.rank_lanes_ready.connect(lambda loaded: QTimer.singleShot(0, lambda: frame(loaded.label)))
""" + timed_tail("panel.open_rank_timelines(sys.argv[1])")


def fixtures() -> Path:
    shared = Path(os.environ.get("STUDIO_SHARED", REPO.parents[1] / "shared"))
    for base in (shared / "fixtures", REPO.parent / "shared" / "fixtures", Path("/work/shared/fixtures")):
        if (base / REAL).is_dir():
            return base / REAL
    raise SystemExit("the real 2-rank export is not there (set STUDIO_SHARED to the shared folder)")


def synthesize(out: Path, events: int, ranks: int = RANKS) -> tuple[int, int]:
    """``ranks`` rank folders under ``out``; returns (events per rank, steps per rank)."""
    real = fixtures()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    timelines, steps, written = {}, 0, 0
    for base in (0, 1):
        source = real / f"rank{base}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        timelines[base], steps, written = _timeline(source / "trace_view.json", out / f"base{base}.json", events)
    for rank in range(ranks):
        base = rank % 2
        source = real / f"rank{base}_ascend_pt"
        folder = out / f"rank{rank}_ascend_pt"
        output = folder / "ASCEND_PROFILER_OUTPUT"
        output.mkdir(parents=True)
        os.link(timelines[base], output / "trace_view.json")
        for name in SUMMARY_FILES:
            shutil.copyfile(source / "ASCEND_PROFILER_OUTPUT" / name, output / name)
        info = json.loads((source / f"profiler_info_{base}.json").read_text())
        info["rank_id"] = rank
        (folder / f"profiler_info_{rank}.json").write_text(json.dumps(info))
        shutil.copyfile(source / "profiler_metadata.json", folder / "profiler_metadata.json")
        _per_step(source / "ASCEND_PROFILER_OUTPUT", output, steps)
    return written, steps


def _timeline(source: Path, target: Path, events: int) -> tuple[Path, int, int]:
    """The real timeline repeated to ``events`` events, each step after the one before."""
    data = json.loads(source.read_text())
    meta = [e for e in data if e.get("ph") == "M" or "ts" not in e]
    timed = [e for e in data if e.get("ph") != "M" and "ts" in e]
    stamps = [_ns(e["ts"]) for e in timed]
    span = max(t + int(float(e.get("dur", 0)) * 1000) for t, e in zip(stamps, timed)) - min(stamps)
    gap = span + 1_000_000  # 1 ms between steps
    steps = math.ceil(max(1, events - len(meta)) / len(timed))
    templates = []
    for e in timed:
        item = dict(e, ts="\x00")
        if "id" in item:
            item["id"] = "\x01"
        head, tail = json.dumps(item).split('"\\u0000"')
        templates.append((head, tail, str(e.get("id", ""))))
    written = len(meta)
    with open(target, "w") as handle:
        handle.write("[" + ",".join(json.dumps(e) for e in meta))
        for step in range(steps):
            shift = step * gap
            parts = []
            for (head, tail, flow), stamp in zip(templates, stamps):
                t = stamp + shift
                text = f'{head}"{t // 1000}.{t % 1000:03d}"{tail}'
                if flow:
                    text = text.replace('"\\u0001"', json.dumps(f"{flow}-{step}"))
                parts.append(text)
            handle.write("," + ",".join(parts))
            written += len(parts)
        handle.write("]")
    return target, steps, written


def _ns(ts) -> int:
    whole, _, frac = str(ts).partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def _per_step(source: Path, output: Path, steps: int) -> None:
    """step_trace_time.csv and communication(_matrix).json with one entry per repeated step."""
    lines = (source / "step_trace_time.csv").read_text().splitlines()
    first = lines[1].split(",")
    rows = [",".join([str(int(first[0]) + k)] + first[1:]) for k in range(steps)]
    (output / "step_trace_time.csv").write_text("\n".join([lines[0], *rows]) + "\n")
    for name in ("communication.json", "communication_matrix.json"):
        data = json.loads((source / name).read_text())
        (key, value), = data.items()
        number = int(key[4:])
        (output / name).write_text(json.dumps({f"step{number + k}": value for k in range(steps)}))


def cluster_cli(folder: Path) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
        env = {**os.environ, "STUDIO_HOME": home, "PYTHONPATH": str(REPO)}
        return run_measured([sys.executable, "-m", "studio", "profile", "cluster", "--json", str(folder)], env)


def lanes(folder: Path, home: str, script: str = LANES) -> tuple[dict, float]:
    """The rank lanes' first frame in a fresh process (STUDIO_HOME ``home``); (figures, peak MB)."""
    env = {**os.environ, "STUDIO_HOME": home, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as out:
        result = out.name
    try:
        _, _, peak = run_measured([sys.executable, "-c", script, str(folder), result], env)
        return json.loads(Path(result).read_text()), peak
    finally:
        os.unlink(result)


def on_hosts(folder: Path, work: Path) -> None:
    """Rows: the ranks summarised in place on two hosts against downloading the folders first."""
    import threading

    from bench_common import loopback_sshd
    from standins import write_host

    from studio.core.jobs import run_job
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts
    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_wheel import build_wheel
    from studio.targets.ssh import SshTarget
    from studio.targets.transfer.fetch import folder_fetcher

    started = loopback_sshd("studio-bench-cluster-")
    if started is None:
        return
    root, server = started
    try:
        engines, home = root / "engines", root / "home"
        write_host(home, server, name="node1", engine_root=str(engines))
        hosts_toml = home / "config" / "hosts.toml"
        hosts_toml.write_text(hosts_toml.read_text() + "\n" + hosts_toml.read_text().replace("node1", "node2"))
        split = {"node1": work / "node1" / "job", "node2": work / "node2" / "job"}
        for place in split.values():
            place.mkdir(parents=True)
        for rank_folder in sorted(folder.iterdir()):
            if rank_folder.is_dir():
                node = "node1" if int(rank_folder.name[4:].split("_")[0]) < RANKS // 2 else "node2"
                rank_folder.rename(split[node] / rank_folder.name)
        targets = {name: SshTarget(HostEntry(name=name, host=server.host, port=server.port, user=server.user,
                                             key_file=str(server.client_key), extra={"engine_root": str(engines)}),
                                   KnownHosts(read_only=[server.known_hosts])) for name in split}
        started_at = time.perf_counter()
        run_job(ensure_engine(targets["node1"], wheel=build_wheel(root / "wheels")))
        print(f"# engine bootstrap on the host: {time.perf_counter() - started_at:.1f} s (not timed)", file=sys.stderr)
        env = {**os.environ, "STUDIO_HOME": str(home), "PYTHONPATH": str(REPO)}
        command = [sys.executable, "-m", "studio", "profile", "cluster", "--json"]
        on = [arg for name, place in split.items() for arg in ("--on", f"{name}:{place}")]
        result = work / "in_place.json"
        t = time.perf_counter()
        with open(result, "w") as out:
            subprocess.run(command + on, stdout=out, check=True, env=env, timeout=1200)
        in_place = time.perf_counter() - t
        travelled = sum(h["bytes"] for h in json.loads(result.read_text())["source"]["hosts"])
        local = work / "downloaded"
        t = time.perf_counter()
        errors = []

        def download(name: str) -> None:
            try:
                fetch = folder_fetcher(targets[name])
                run_job(fetch(str(split[name]), [], local / name))
            except Exception as exc:  # noqa: BLE001 - reported as the row's failure
                errors.append(exc)

        threads = [threading.Thread(target=download, args=(name,)) for name in split]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        subprocess.run(command + [str(local)], stdout=subprocess.DEVNULL, check=True, env=env, timeout=1200)
        downloaded = time.perf_counter() - t
        size = sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
        row(f"profile cluster, {RANKS} ranks on 2 hosts, read in place (both at once)", "s", in_place, downloaded,
            "download both folders (tar stream, both at once), then read here", "-")
        row("profile cluster on 2 hosts: bytes brought back", "MB", travelled / 1e6, size / 1e6,
            "the downloaded folders", "-")
        for target in targets.values():
            target.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def scale_parser(description: str, folder: str) -> argparse.ArgumentParser:
    """The options of a benchmark on the synthesized ranks: --dir (under the temp folder), --events, --quick."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / folder)
    parser.add_argument("--events", type=int, default=1_000_000, help="events per rank")
    parser.add_argument("--quick", action="store_true", help="16 ranks x 50k events: a smoke test")
    return parser


def main() -> int:
    parser = scale_parser(__doc__.splitlines()[0], "studio_bench_cluster")
    parser.add_argument("--hosts", action="store_true",
                        help="also: the ranks left on two hosts (loopback sshd), read in place against downloaded")
    args = parser.parse_args()
    events = 50_000 if args.quick else args.events
    started = time.perf_counter()
    try:
        per_rank, steps = synthesize(args.dir / "ranks", events)
        folder = args.dir / "ranks"
        one = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
        size = one.stat().st_size / 1e6
        print(f"# {RANKS} ranks x {per_rank:,} events ({steps} steps, {size:.0f} MB each) in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        peer = run_measured([sys.executable, "-c", JSON_LOAD, str(one)], dict(os.environ))
        ours = cluster_cli(folder)
        label = f"{RANKS} ranks x {per_rank / 1e6:.2g}M events"
        row(f"profile cluster, {label}, wall", "s", ours[0], RANKS * peer[0],
            f"{RANKS} x json.load of one rank's trace_view.json ({size:.0f} MB)", "<= 0.3 of it")
        row(f"profile cluster, {label}, peak memory (summed RSS)", "MB", ours[2], RANKS * peer[2],
            f"{RANKS} x json.load of one rank", "< 4000 MB")
        home = tempfile.mkdtemp(prefix="studio-bench-home-")
        try:
            progressive, _ = lanes(folder, home, PROGRESSIVE)  # cold: no rank cached
        finally:
            shutil.rmtree(home, ignore_errors=True)
        home = tempfile.mkdtemp(prefix="studio-bench-home-")
        try:
            cold, cold_peak = lanes(folder, home)
            warm, warm_peak = lanes(folder, home)
        finally:
            shutil.rmtree(home, ignore_errors=True)
        row(f"rank lanes, {label}: open to first frame, cold (decoded on every core)", "s",
            cold["open"] + cold["first_frame"], RANKS * peer[0], f"{RANKS} x json.load of one rank", "-")
        one_shot = cold["open"] + cold["first_frame"]
        row(f"rank lanes in the Profiler, {label}, cold: first frame (each rank's step summary)", "s",
            progressive["shown"][0][0], one_shot, "every rank decoded before the first frame", "< 5 s")
        row(f"rank lanes in the Profiler, {label}, cold: every rank decoded and shown", "s",
            progressive["all"], one_shot, "every rank decoded before the first frame", "-")
        row(f"rank lanes in the Profiler, {label}, cold: worst GUI stall while the ranks come in "
            f"({len(progressive['shown'])} swaps, {progressive.get('paints', 0)} paints)", "ms", progressive["stall_ms"], 50.0, "the stall limit", "< 50 ms")
        row(f"rank lanes, {label}: open to first frame from the ranks' caches", "s",
            warm["open"] + warm["first_frame"], RANKS * peer[0], f"{RANKS} x json.load of one rank", "< 5 s")
        row(f"rank lanes, {label}: slowest frame zooming ({len(warm['frames'])} frames)", "ms",
            max(warm["frames"]), 50.0, "the stall limit", "< 50 ms")
        row(f"rank lanes, {label}: peak memory cold / from caches", "MB", cold_peak, warm_peak,
            "from the caches (ours, right)", "< 4000 MB")
        if args.hosts:
            on_hosts(folder, args.dir / "hosts")
        print(f"# {cold['slices']:,} slices on {cold['tracks']} tracks; whole run "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)
    load_row()
    return 0


if __name__ == "__main__":
    sys.exit(main())
