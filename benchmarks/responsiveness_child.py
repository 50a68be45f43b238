"""One row of the responsiveness benchmark, run in a fresh interpreter (``bench_responsiveness.py``).

Builds Studio's real main window (all panels, offscreen), starts one long job the way a user does
(through the window or the panel's own buttons), and ticks a 5 ms QTimer on the GUI thread until
the job and whatever it triggers (opening the converted model, the plan after an upload) are done.
Prints one JSON line: worst and 99th-percentile gap between ticks, tick count, seconds, whether
the job finished (``done``; a loaded machine may not finish it within ``JOB_LIMIT_S``: the gaps up to
then are still the figures) and, when the job failed, its ``error`` (then the exit status is 1).

    python responsiveness_child.py KIND ARG [--in-thread]

KIND: ``trace`` / ``model`` (ARG a file, opened with ``open_paths``), ``convert`` (ARG an ONNX
model: FP16 with validation in the Converter), ``accuracy`` (ARG ``golden|target`` folders: the
Accuracy panel compares them), ``upload`` (ARG a JSON description of the sshd and the folders:
dry run then apply in the Deployment panel), ``gallery`` (ARG a JSON of model, pictures and output
folder: the Gallery panel shown, its run over the pictures, its results opened), ``idle`` (ARG
seconds: no job, the machine's floor).
``--in-thread`` makes the trace/model parse run in a thread of this interpreter (the peer).
``--stalls FILE`` writes the stacks of every thread whenever the timer has not ticked for 30 ms
(``faulthandler``'s watchdog, which needs no interpreter lock), to find what holds the GUI up.
"""

from __future__ import annotations

import faulthandler
import json
import sys
import time
from pathlib import Path

# Guards against a hang, not timings: a loaded machine is slow, and the figures are reported as
# they are. Past JOB_LIMIT_S the row is printed with done = false.
READY_LIMIT_S = 600
JOB_LIMIT_S = 1500


def _in_thread() -> None:
    """The peer: parsing in a GUI-process thread, as before worker processes."""
    from studio.tools.graph import onnx_parse
    from studio.tools.profiler import loader

    loader.OFFLOAD_BYTES = 1 << 62
    onnx_parse.INCREMENTAL = False
    onnx_parse.INFER_IN_WORKER_NODES = onnx_parse.INFER_IN_WORKER_BYTES = 1 << 62


def _register_host(spec: dict) -> None:
    """Write the sshd's host entry and the deployment into this run's STUDIO_HOME (before the
    window reads them)."""
    from studio.remote.hosts import HostEntry, HostStore
    from studio.tools.deploy.deployments import Deployment, DeploymentStore

    hosts = HostStore()
    hosts.put(HostEntry(name="bench", host=spec["host"], port=spec["port"], user=spec["user"],
                        key_file=spec["key"]))
    hosts.save()
    store = DeploymentStore()
    store.put(Deployment("bench", "bench", spec["local"], spec["remote"]))
    store.save()


def driver(kind: str, arg: str, window, app, errors: list[str]):
    """(start, done) for the job ``kind``: ``start()`` begins it as a user would, ``done()`` says
    when it and what it triggers have finished. Preparation (not timed) happens here; a job that
    fails meanwhile lands in ``errors``."""
    runner = window.runner
    if kind in ("trace", "model"):
        path = Path(arg)
        panel = window.panels.get("profiler" if kind == "trace" else "graph")
        if kind == "trace":
            before = len(panel.profiles)
            done = lambda: len(panel.profiles) > before  # noqa: E731
        else:
            done = lambda: (panel.left.model is not None and panel.left.model.path == path  # noqa: E731
                            and panel.left.view is not None)
        return (lambda: window.open_paths([path])), (lambda: done() and not runner.active_jobs)
    if kind == "convert":
        panel = window.panels.get("convert")
        panel.model_page.set_model(Path(arg))
        _settle(app, lambda: panel.model_page.inputs_table.rowCount() > 0 and not runner.active_jobs, errors)
        panel.model_page.output_type_combo.setCurrentText("FP16")
        assert panel.advanced_page.validate_box.isChecked(), "validation is on by default"
        return panel.finish, lambda: panel.last_report is not None and not runner.active_jobs
    if kind == "accuracy":
        panel = window.panels.get("accuracy")
        golden, target = arg.split("|")
        return (lambda: panel.compare(Path(golden), Path(target))), \
            (lambda: panel.result is not None and not runner.active_jobs)
    if kind == "upload":
        panel = window.panels.get("deploy")
        panel.reload()
        panel.mode.setCurrentIndex(panel.mode.findData("upload"))
        applied = [False]

        def done() -> bool:
            # Dry run first, then apply the plan it shows, as a user presses the two buttons.
            if panel.plan is not None and not panel._busy() and not applied[0]:
                applied[0] = True
                panel.apply()
                return False
            return applied[0] and panel.last_result is not None and not panel._busy() and not runner.active_jobs
        return panel.dry_run, done
    if kind == "gallery":
        from studio.tools.infer.runner import InferOptions

        spec = json.loads(arg)
        panel = window.panels.get("gallery")
        window.show_panel("gallery")
        options = InferOptions(Path(spec["model"]), Path(spec["pictures"]), Path(spec["out"]), "segment")
        # done: the results shown and the thumbnails of the rows in view read (their job ran)
        return (lambda: panel.run_infer(options)), \
            (lambda: panel.state.run is not None and len(panel.model.rows) == spec["count"]
             and panel._thumb_job is not None and not runner.active_jobs)
    if kind == "idle":
        until = [0.0]

        def start() -> None:
            until[0] = time.perf_counter() + float(arg)
        return start, lambda: until[0] and time.perf_counter() > until[0]
    raise SystemExit(f"unknown job kind {kind!r}")


def _settle(app, condition, errors: list[str], timeout_s: float = READY_LIMIT_S) -> None:
    deadline = time.perf_counter() + timeout_s
    while not condition():
        if errors:
            raise SystemExit(f"a job failed while preparing the row: {'; '.join(errors)}")
        if time.perf_counter() > deadline:
            raise SystemExit(f"preparation did not finish in {timeout_s} s (hung?)")
        app.processEvents()
        time.sleep(0.01)


def main() -> int:
    kind, arg = sys.argv[1], sys.argv[2]
    if "--in-thread" in sys.argv:
        _in_thread()
    if kind == "upload":
        spec = json.loads(arg)
        _register_host(spec)
    import numpy as np
    from PySide6.QtCore import QEventLoop, QTimer

    from studio.ui.app import build_window, create_application

    app = create_application()
    window = build_window()
    window.resize(1600, 1000)
    window.show()
    ready, built = QEventLoop(), []
    window.panels_ready.connect(lambda: (built.append(True), ready.quit()))
    QTimer.singleShot(READY_LIMIT_S * 1000, ready.quit)
    ready.exec()
    if not built:
        raise SystemExit(f"the window did not build its panels in {READY_LIMIT_S} s (hung?)")
    for _ in range(20):
        app.processEvents()
    errors: list[str] = []
    wait = QEventLoop()

    def failed(handle, error, _traceback) -> None:  # a real error: the row fails
        errors.append(f"{handle.title}: {error}")
        wait.quit()

    window.runner.job_failed.connect(failed)
    start_job, done = driver(kind, arg, window, app, errors)
    for _ in range(20):
        app.processEvents()

    gaps, last = [], [0.0]
    stalls = open(sys.argv[sys.argv.index("--stalls") + 1], "w") if "--stalls" in sys.argv else None

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now
        if stalls is not None:
            if gaps[-1] > 0.03:
                stalls.write(f"=== the gap above: {gaps[-1] * 1000:.0f} ms, ending {now - started:.3f} s\n")
                stalls.flush()
            faulthandler.cancel_dump_traceback_later()
            faulthandler.dump_traceback_later(0.03, repeat=True, file=stalls)

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    poll = QTimer()
    poll.setInterval(20)
    poll.timeout.connect(lambda: done() and wait.quit())
    started = last[0] = time.perf_counter()
    timer.start()
    poll.start()
    start_job()
    QTimer.singleShot(JOB_LIMIT_S * 1000, wait.quit)
    wait.exec()
    for _ in range(10):  # the first frames after the result arrived
        app.processEvents()
        time.sleep(0.005)
    timer.stop()
    if stalls is not None:
        faulthandler.cancel_dump_traceback_later()
        stalls.close()
    elapsed = time.perf_counter() - started
    gaps_ms = np.array(gaps[1:]) * 1000
    print(json.dumps({"worst": float(gaps_ms.max()), "p99": float(np.percentile(gaps_ms, 99)),
                      "ticks": len(gaps_ms), "seconds": elapsed, "done": bool(done()),
                      **({"error": "; ".join(errors)} if errors else {})}), flush=True)
    window.runner.cancel_all()
    window.close()
    return 1 if errors else 0


if __name__ == "__main__":  # worker processes import this file as their __main__: run nothing then
    sys.exit(main())
