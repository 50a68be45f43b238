"""The Profiler's reads: the jobs that open a profile file and a multi-rank folder's lanes.

A big trace is shown while it is read, and a multi-rank folder while its ranks decode: the job
hands each partial profile over (:attr:`ProfileReader.arrived`, from the job's thread) and waits,
bounded, until the window has painted it (:meth:`ProfileReader.when_painted`); the whole one comes
as the job ends (:attr:`ProfileReader.whole`). The statistics of what a worker process read come ready from it
(:mod:`studio.tools.profiler.view_stats`): the window only swaps them in.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from studio.ui.panels.profiler.loading import load_job, rank_lanes_job
from studio.ui.panels.profiler.state import Loaded

SWAP_WAIT_S = 1.0  # the longest a job waits for the window to paint the profile it handed over


class ProfileReader(QObject):
    """Starts the reading jobs and hands what they read to the window, one profile at a time.

    Signals:
        arrived(Loaded): a partial profile (a file's read part, ranks' lanes), emitted from a job's
            thread, received on the GUI thread
        whole(Loaded): the profile as its job ended (whole, or lanes left part way by a cancel)
        info(str): what the info line says of a read (opening, could not open)
    """

    arrived = Signal(object)
    whole = Signal(object)
    info = Signal(str)

    def __init__(self, runner, timeline, read_options=lambda: None, parent: QObject | None = None):
        """``read_options()``: how big traces are read (tests force small pieces; see
        partial_read.open_growing)."""
        super().__init__(parent)
        self.runner, self.timeline, self.read_options = runner, timeline, read_options
        self.rank_jobs: dict[Path, object] = {}  # folder -> the job reading its ranks' lanes
        self.swapped: dict[Path, threading.Event] = {}  # path -> set once its profile's swap is painted

    def open_file(self, path: Path) -> None:
        """Read the profile at ``path`` (a job); a big trace arrives in parts as it is read."""
        self.info.emit(f"Opening {path.name}…")
        read_options = self.read_options()
        self._start(path, f"Opening {path.name}",
                    lambda cancel, show: load_job(path, cancel, show, read_options))

    def open_rank_timelines(self, folder: Path) -> None:
        """Read every rank of ``folder`` onto one timeline, unless a job already reads them."""
        if folder in self.rank_jobs:
            return  # still coming in
        self.info.emit(f"Opening every rank of {folder.name}…")  # (again, when cancelled part way)
        handle = self._start(folder, f"Opening the ranks of {folder.name}",
                             lambda cancel, show: rank_lanes_job(folder, cancel, show))
        self.rank_jobs[folder] = handle
        handle.ended.connect(lambda: self.rank_jobs.pop(folder, None))

    def _start(self, path: Path, title: str, read):
        swapped = self.swapped[path] = threading.Event()
        show = self._swap_waiter(swapped)

        def job(cancel):
            cancel.on_cancel(swapped.set)
            return read(cancel, show)

        handle = self.runner.start(title, job)
        handle.ended.connect(swapped.set)
        handle.finished.connect(self.whole.emit)
        # Why it failed is the notice board's to show (the runner posts it); the line only stops
        # saying "Opening…".
        handle.failed.connect(lambda exc, _tb: self.info.emit(f"Could not open {path.name}"))
        return handle

    def _swap_waiter(self, swapped: threading.Event):
        """A job's ``show``: hand a partial profile to the window and wait (bounded) until it is painted."""
        def show(loaded: Loaded, *_counts) -> None:  # on the job's thread
            # The job waits while the window swaps the profile in and paints it: building the next
            # one meanwhile would take half the interpreter's turns from that frame (measured:
            # a 10 ms swap took 20-30 ms beside a join). Bounded, so nothing can hang on it; a
            # cancel or the job's end sets the event too.
            swapped.clear()
            self.arrived.emit(loaded)
            swapped.wait(SWAP_WAIT_S)
        return show

    def when_painted(self, path: Path) -> None:
        """Let the job reading ``path`` go on once the timeline has painted what was swapped in (at
        once when the timeline is not on screen: no paint will come)."""
        swapped = self.swapped.get(Path(path))
        if swapped is None:
            return
        if self.timeline.isVisible() and not self.timeline.visibleRegion().isEmpty():
            self.timeline.after_next_paint(swapped.set)
        else:
            swapped.set()
