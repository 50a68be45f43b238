"""The GUI thread's garbage collector and jobs that build big structures: a job's objects are frozen
out of the collector's way even though the GUI turned automatic collection off, and the GUI's timer
does not walk them while the job is still building."""

from __future__ import annotations

import gc

from studio.core import gc_pause as gcpause
from studio.ui.gui_gc import GuiThreadCollector


def _build(count: int) -> list:
    return [[i] for i in range(count)]  # lists: tracked by the collector


def test_a_big_jobs_objects_are_frozen_when_the_gui_turned_collection_off(qtbot):
    collector = GuiThreadCollector(interval_ms=10_000)
    try:
        assert not gc.isenabled()
        frozen = gc.get_freeze_count()
        with gcpause.paused_gc():
            kept = _build(gcpause.FREEZE_OVER + 50_000)
        assert gc.get_freeze_count() >= frozen + len(kept)  # a young collection will not walk them
        assert not gc.isenabled()  # still the GUI's own collector's to run
    finally:
        collector.stop()
        gc.unfreeze()


def test_the_gui_timer_waits_while_a_job_builds(qtbot):
    collector = GuiThreadCollector(interval_ms=10_000)
    try:
        with gcpause.paused_gc():
            kept = _build(50_000)
            young = gc.get_count()[0]
            assert young > collector.thresholds[0]
            collector.check()  # the timer's tick
            assert gc.get_count()[0] >= young  # nothing collected: the job's objects were not walked
        collector.check()
        assert gc.get_count()[0] < young  # after the job, collection goes on
        del kept
    finally:
        collector.stop()
        gc.unfreeze()
