"""Graph viewer: model file to laid-out graph and first painted frame, against Graphviz ``dot``.

Models are generated (studio.tools.graph.synthetic: ResNet / transformer / U-Net blocks with skips
and branches) at 2,000, 10,000 and 100,000 nodes (``--quick``: 2,000 and 10,000). For each size:

* ours, opened as the panel opens it: read (with shape inference up to 50k nodes), group by scope,
  lay out the visible level, paint the first 1600x1000 frame offscreen;
* ours, flat: every node laid out in one layered layout (no grouping);
* ours, expand all: every group expanded (one nested layout per group, as the Expand button);
* Graphviz ``dot -Tplain`` on the same 2,000-node graph with the same node sizes (the issue's
  peer; dot does not finish 10,000 nodes in minutes, see ../shared/reference/graph_viewer.md).
* frame time when panning and zooming the flat 10,000-node layout (goal < 30 ms);
* the longest pause of the GUI thread while the panel opens the 100,000-node model and expands it,
  with and without pausing Python's cyclic GC during the jobs (studio/core/gc_pause.py).

Prints JSON lines for benchmarks/run.py. Graphviz is not a project dependency: install it with
``apt-get install graphviz`` to get the peer row.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from studio.core.jobs import run_job
from studio.tools.graph.grouping import Hierarchy
from studio.tools.graph.reader import read_graph
from studio.tools.graph.synthetic import write_synthetic
from studio.tools.graph.view import build_view

DOT_TIMEOUT = 300


def emit(figure: str, ours: float, peer: float, peer_name: str, goal: str) -> None:
    print(json.dumps({"figure": figure, "unit": "s", "ours": round(ours, 4), "peer": round(peer, 4),
                      "peer_name": peer_name, "goal": goal}), flush=True)


def open_and_paint(path: Path, canvas) -> tuple[float, float, object]:
    """(seconds to laid out, seconds to first painted frame, view)."""
    start = time.perf_counter()
    model = run_job(read_graph(path))
    hierarchy = Hierarchy(model.main)
    view = build_view(model.main, hierarchy)
    laid_out = time.perf_counter() - start
    canvas.set_view(view)
    canvas.grab()  # forces one full paint
    return laid_out, time.perf_counter() - start, model


def flat_layout(path: Path):
    start = time.perf_counter()
    model = run_job(read_graph(path))
    view = build_view(model.main, None)
    return time.perf_counter() - start, view


def expand_all_seconds(model) -> float:
    """Every group expanded: the nested layout of all nodes, as the panel's Expand button does."""
    start = time.perf_counter()
    hierarchy = Hierarchy(model.main)
    build_view(model.main, hierarchy, {g.id for g in hierarchy.groups if g.parent != -2})
    return time.perf_counter() - start


def longest_pause(path: Path, pause_gc: bool) -> float:
    """Longest gap between 5 ms timer ticks on the GUI thread while the panel opens ``path`` and
    then expands every group (both run as jobs)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from studio.core import gc_pause as gcpause
    from studio.ui.jobs import JobRunner
    from studio.ui.panels.graph import GraphPanel

    gcpause.ENABLED = pause_gc
    app = QApplication.instance()
    runner = JobRunner()
    panel = GraphPanel(runner)
    panel.resize(1400, 900)
    panel.show()
    gaps, last = [], [time.perf_counter()]

    def tick():
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now
    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(5)
    panel.open_path(path)
    deadline = time.perf_counter() + 120
    while panel.left.view is None and time.perf_counter() < deadline:
        app.processEvents()
    panel.expand_all()
    while len(panel.left.view.items) < 1000 and time.perf_counter() < deadline:
        app.processEvents()
    timer.stop()
    runner.wait_for_done(10000)
    panel.close()
    gcpause.ENABLED = True
    return max(gaps)


def dot_seconds(view, folder: Path) -> float | None:
    """Lay out the same items and edges with dot (sizes in inches at 72 dpi)."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    lay = view.layout
    lines = ["digraph g {", "node [shape=box fixedsize=true];", "nodesep=0.33; ranksep=0.5;"]
    for i, item in enumerate(view.items):
        label = item.label.replace('"', "'")
        lines.append(f'n{i} [label="{label}" width={lay.width[i] / 72:.3f} height={lay.height[i] / 72:.3f}];')
    for a, b in zip(lay.edge_src.tolist(), lay.edge_dst.tolist()):
        lines.append(f"n{a} -> n{b};")
    lines.append("}")
    src = folder / "graph.dot"
    src.write_text("\n".join(lines))
    start = time.perf_counter()
    try:
        subprocess.run([dot, "-Tplain", str(src), "-o", str(folder / "graph.plain")], check=True,
                       timeout=DOT_TIMEOUT, capture_output=True)
    except subprocess.TimeoutExpired:
        return float(DOT_TIMEOUT)
    return time.perf_counter() - start


def frame_times(canvas, view) -> float:
    """Median seconds of one frame while panning and zooming around the graph."""
    canvas.set_view(view)
    canvas.grab()
    times = []
    for scale in (0.02, 0.1, 0.3, 0.6, 1.0):
        canvas.scale = scale
        bounds = canvas.painter_cache.bounds()
        for k in range(8):
            y = bounds.top() + bounds.height() * k / 8
            canvas.origin = type(canvas.origin)(bounds.left(), y)
            start = time.perf_counter()
            canvas.grab()
            times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from studio.ui.panels.graph.canvas import GraphCanvas

    quick = "--quick" in sys.argv
    app = QApplication.instance() or QApplication([])  # noqa: F841 - keeps Qt alive for the canvas
    canvas = GraphCanvas()
    canvas.resize(1600, 1000)
    sizes = (2000, 10000) if quick else (2000, 10000, 100000)
    goals = {2000: "< 1 s", 10000: "< 3 s", 100000: "< 20 s (collapsed)"}
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        folder = Path(tmp)
        for n in sizes:
            path = write_synthetic(folder / f"synthetic_{n}.onnx", n)
            open_and_paint(path, canvas) if n == sizes[0] else None  # warm imports once
            laid, frame, model = open_and_paint(path, canvas)
            flat_s, flat_view = flat_layout(path)
            print(f"# {n}: {len(model.main.nodes):,} nodes, laid out {laid:.3f} s, first frame {frame:.3f} s, "
                  f"flat layout {flat_s:.3f} s ({len(flat_view.items):,} items)", file=sys.stderr)
            if n == 2000:
                dot_s = dot_seconds(flat_view, folder)
                if dot_s is not None:
                    emit("graph 2k: file to flat layout vs dot", flat_s, dot_s, "graphviz dot -Tplain", "faster than dot")
                    emit("graph 2k: file to first frame", frame, dot_s, "graphviz dot -Tplain (layout only)", goals[n])
                else:
                    print("# graphviz dot not installed: no peer row (apt-get install graphviz)", file=sys.stderr)
            else:
                emit(f"graph {n // 1000}k: file to first frame", frame, flat_s,
                     "ours, flat layout of every node", goals[n])
                emit(f"graph {n // 1000}k: expand every group (nested)", expand_all_seconds(model), flat_s,
                     "ours, flat layout of every node", "as fast as flat")
            if n == 100000:
                ours = longest_pause(path, pause_gc=True)
                peer = longest_pause(path, pause_gc=False)
                emit("graph 100k: longest GUI pause, open + expand", ours, peer,
                     "same, cyclic GC not paused", "window stays responsive")
            if n == 10000:
                median, worst = frame_times(canvas, flat_view)
                emit("graph 10k flat: pan/zoom frame (median)", median, worst, "ours, worst frame", "< 30 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
