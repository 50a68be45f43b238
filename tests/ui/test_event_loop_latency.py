"""The GUI thread never waits: a CPU-heavy job must not stall the event loop."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QElapsedTimer, QTimer

from studio.jobs import Progress
from studio.ui.jobs import JobRunner, JobState

TICK_MS = 10
WORST_GAP_LIMIT_MS = 100


def cpu_heavy_job(cancel, seconds: float = 1.5, step_iterations: int = 2000):
    """Pure-Python arithmetic (holds the GIL between switches); each step is ``step_iterations`` long."""
    deadline = time.perf_counter() + seconds
    total, count = 0, 0
    while time.perf_counter() < deadline:
        for i in range(step_iterations):
            total += i * i % 7
        count += 1
        yield Progress(min(1.0, 1 - (deadline - time.perf_counter()) / seconds), f"chunk {count}")
    return total


def _worst_idle_gap_ms(qtbot, duration_ms: int = 600) -> int:
    """The worst tick gap with no job running: what the machine itself costs (other processes)."""
    gaps: list[int] = []
    clock = QElapsedTimer()
    timer = QTimer()
    timer.setInterval(TICK_MS)
    timer.timeout.connect(lambda: gaps.append(clock.restart()))
    clock.start()
    timer.start()
    qtbot.wait(duration_ms)
    timer.stop()
    return max(gaps[1:], default=0)


@pytest.mark.parametrize("step_iterations", [2000, 1_000_000], ids=["chatty-steps", "150ms-steps"])
def test_worst_event_loop_gap_under_load(qtbot, step_iterations):
    runner = JobRunner()
    gaps: list[int] = []
    clock = QElapsedTimer()
    timer = QTimer()
    timer.setInterval(TICK_MS)

    def on_tick() -> None:
        gaps.append(clock.restart())

    timer.timeout.connect(on_tick)
    handles = [runner.start(f"heavy {i}", lambda cancel: cpu_heavy_job(cancel, step_iterations=step_iterations))
               for i in range(2)]  # both cores busy
    clock.start()
    timer.start()
    qtbot.waitUntil(lambda: all(h.state is JobState.FINISHED for h in handles), timeout=20_000)
    timer.stop()
    assert len(gaps) > 40, "the timer must have ticked throughout the job"
    worst = max(gaps[1:])
    # On a machine busy with other work the timer itself is late; that is not our stall.
    limit = WORST_GAP_LIMIT_MS + _worst_idle_gap_ms(qtbot)
    assert worst < limit, f"event loop stalled for {worst} ms, limit {limit} ms (ticks: {len(gaps)})"


def _gaps_while(qtbot, runner: JobRunner, make_job, tick_ms: int = 5, timeout_ms: int = 60_000) -> list[int]:
    """Tick gaps (ms) of a ``tick_ms`` timer while the job runs to its end."""
    gaps: list[int] = []
    clock = QElapsedTimer()
    timer = QTimer()
    timer.setInterval(tick_ms)
    timer.timeout.connect(lambda: gaps.append(clock.restart()))
    clock.start()
    timer.start()
    handle = runner.start("heavy", make_job)
    qtbot.waitUntil(lambda: not handle.active, timeout=timeout_ms)
    timer.stop()
    assert handle.state is JobState.FINISHED, handle.error
    return gaps[1:]


def test_opening_a_big_trace_does_not_stall_the_event_loop(qtbot, tmp_path):
    """The real GIL-holding job: msgspec decodes a 64 MB trace in 16 MB chunks, numpy builds columns.

    In a thread of this interpreter each chunk holds the lock for 100-200 ms and the timer waits as
    long; the profiler panel's job parses in a worker process and only maps the result here.
    """
    from profiler_tracegen import generate

    from studio.ui.panels.profiler.panel import load_job

    import gc

    path = generate(tmp_path / "big.json", 300_000)
    runner = JobRunner()
    # What earlier tests left in this process is not the job's doing: a full collection of it
    # (hundreds of thousands of objects after the whole suite) would stop the timer by itself.
    gc.collect()
    gc.freeze()
    try:
        gaps = _gaps_while(qtbot, runner, lambda cancel: load_job(path, cancel))
    finally:
        gc.unfreeze()
    assert len(gaps) > 40, "the timer must have ticked throughout the job"
    # Decoding in this interpreter stalls the loop once per chunk (100-200 ms, again and again); a
    # loaded machine may also deschedule the process once. So: at most one gap past 50 ms over the
    # idle worst, none past 150 ms over it.
    idle = _worst_idle_gap_ms(qtbot)
    long_gaps = sorted(g for g in gaps if g > 50 + idle)
    assert len(long_gaps) <= 1 and max(gaps) < 150 + idle, \
        f"event loop stalled: gaps {long_gaps} ms past {50 + idle} ms (idle worst {idle} ms, ticks: {len(gaps)})"
