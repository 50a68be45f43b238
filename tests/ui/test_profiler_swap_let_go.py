"""A fuller profile swapped in lets the one before it go off the window's thread: unmapping a big
snapshot's columns there held the window 87 ms at 10M events."""

from __future__ import annotations

import threading

from studio.core.jobs import run_job
from studio.tools.profiler.cluster.progressive import open_rank_timelines_progressive
from studio.ui.panels.profiler.loading import partial_loaded

TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"


class _Recorder:
    def __init__(self, seen: list) -> None:
        self.seen = seen

    def __del__(self) -> None:
        self.seen.append(threading.current_thread().name)


def test_the_profile_swapped_out_is_freed_on_another_thread(qtbot, make_window, real_profiles):
    folder = real_profiles / TEXT
    partials = []
    run_job(open_rank_timelines_progressive(
        folder, lambda trace, done, total: partials.append(partial_loaded(folder, trace, done, total)), workers=1))
    summary, one_rank = partials
    seen: list = []
    summary.window = _Recorder(seen)  # freed with the profile it belongs to
    window = make_window()
    profiler = window.panels["profiler"]
    profiler.rank_lanes_ready.emit(summary)
    qtbot.waitUntil(lambda: profiler.state.current is summary, timeout=5000)
    del summary, partials
    profiler.rank_lanes_ready.emit(one_rank)
    qtbot.waitUntil(lambda: profiler.timeline.trace is one_rank.trace, timeout=5000)
    qtbot.waitUntil(lambda: bool(seen), timeout=5000)
    assert seen == ["studio-let-go"]
