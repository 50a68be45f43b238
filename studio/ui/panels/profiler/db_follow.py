"""A profiling database on the timeline, read by the window the user looks at.

Opening a ``msprof_*.db`` / ``ascend_pytorch_profiler_*.db`` builds (once) its query cache and
shows the whole session as per-bucket summaries; as the user zooms or pans, the visible window
(with half a window either side, so a short pan needs nothing new) is asked of the cache in a
job and swapped in with the view kept. Only what is shown is ever read.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from studio.core.jobs import CancelToken, Progress
from studio.tools.profiler import db_cache
from studio.tools.profiler.db_preview import preview_trace
from studio.tools.profiler.db_reader import match_profiling_db
from studio.tools.profiler.db_window import DbWindow, open_window, window_of
from studio.tools.profiler.cluster.rank_windows import FIRST_PIXELS, RankWindows
from studio.tools.profiler.model import source_label
from studio.tools.profiler.stats import share_by_name_id
from studio.ui.panels.profiler.loading import default_rows, loaded_window
from studio.ui.panels.profiler.state import Loaded, ready_rows

POLL_MS = 120      # how often the view's window is compared with the one read
REREAD_ZOOM = 2.0  # a zoom by this factor or more reads the window again, at its level of detail


def handles(path: Path) -> bool:
    """True for a profiling database file (what this module opens by window; a multi-rank folder's
    database-only ranks are read by window by the rank-lanes job and followed here)."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            return match_profiling_db(path, handle.read(16))
    except OSError:
        return False


class DbFollower(QObject):
    """Opens databases by window for ``panel`` and re-reads the window as its timeline moves."""

    def __init__(self, panel):
        super().__init__(panel)
        self.panel = panel
        self.windows: dict[Path, DbWindow | RankWindows] = {}
        self._reads: dict[Path, tuple[float, float, float]] = {}  # per database: (t0, t1, ns per px) read
        self._busy = False
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._on_tick)
        self._timer.start()
        panel.reader.whole.connect(self._on_whole)  # a multi-rank folder's lanes read by window

    def open(self, path: Path) -> None:
        """Open the database at ``path`` (its query cache built in the job when there is none)."""
        path = Path(path)
        self.panel.info.setText(f"Opening {path.name} (by window)…")
        pixels = self.panel.timeline.canvas_width

        def job(cancel: CancelToken):
            if not db_cache.is_complete(db_cache.cache_path(path)):
                yield Progress(None, f"opening {path.name}: a sampled first look")
                self._preview(path)
            yield Progress(None, f"opening {path.name}: building its query cache when there is none")
            window = open_window(path, lambda text: None, cancel)
            cancel.raise_if_cancelled()
            return window, loaded_window(window, None, None, pixels)

        def opened(result: tuple[DbWindow, Loaded]) -> None:
            self._follow(result[1], pixels)
            self.panel._on_rank_lanes(result[1])

        self._busy = True
        handle = self.panel.runner.start(f"Opening {path.name}", job)
        handle.finished.connect(opened)
        handle.ended.connect(self._on_ended)
        handle.failed.connect(lambda exc, _tb: self.panel.info.setText(f"Could not open {path.name}"))

    def _follow(self, loaded: Loaded, pixels: int) -> None:
        """Re-read ``loaded``'s window from now on (the GUI thread's only): its whole session was
        read for ``pixels``."""
        path = Path(loaded.path)
        self.windows[path] = loaded.window
        self._reads[path] = (float("-inf"), float("inf"), loaded.trace.span_ns / max(1, pixels))

    def _on_whole(self, loaded: Loaded) -> None:
        if loaded.window is not None and loaded.complete:
            self._follow(loaded, FIRST_PIXELS)

    def _preview(self, path: Path) -> None:
        """Show sampled device tasks while the cache is built (on the job's thread: handed over by signal)."""
        trace = preview_trace(path)
        if trace is None:
            return
        loaded = Loaded(path, f"{source_label(path)} (by window)", trace, [], [], {},
                        share=share_by_name_id(trace, []), ready=ready_rows([], []), cached=True,
                        counted="PARTIAL: a sampled first look; the statistics come with the query cache",
                        complete=False, rows=default_rows(trace), reading=trace.facts["read by"])
        self.panel.rank_lanes_ready.emit(loaded)

    def settled(self) -> bool:
        """True when what the timeline shows was read for its window and level of detail."""
        current = self.panel.state.current
        return not self._busy and (current is None or Path(current.path) not in self.windows
                                   or self._covers(Path(current.path)))

    def _covers(self, path: Path) -> bool:
        view, read = self.panel.timeline, self._reads.get(path)
        ns_per_px = (view.t1 - view.t0) / max(1, view.canvas_width)
        return read is not None and read[0] <= view.t0 and view.t1 <= read[1] and read[2] > 0 and \
            1 / REREAD_ZOOM < ns_per_px / read[2] < REREAD_ZOOM

    def _on_tick(self) -> None:
        current = self.panel.state.current
        if self._busy or current is None or Path(current.path) not in self.windows:
            return
        if self._covers(Path(current.path)):
            return  # what is shown was read, at about this level of detail
        view = self.panel.timeline
        width = view.t1 - view.t0
        ns_per_px = width / max(1, view.canvas_width)
        window = self.windows[Path(current.path)]
        t0, t1 = view.t0 - width / 2, view.t1 + width / 2
        pixels = 2 * view.canvas_width
        a, b = window_of(current.trace, t0, t1)
        self._busy = True
        self._reads[Path(current.path)] = (t0, t1, ns_per_px)

        def job(cancel: CancelToken):
            yield Progress(None, "reading the visible window")
            return loaded_window(window, a, b, pixels)

        handle = self.panel.runner.start("Reading the visible window", job)
        handle.finished.connect(self.panel._on_rank_lanes)
        handle.ended.connect(self._on_ended)

    def _on_ended(self) -> None:
        self._busy = False
