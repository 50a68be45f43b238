"""A big Chrome trace on screen while it is read: partial traces first, the whole one last.

:func:`open_growing` is :func:`~.loader.open_profile_offloaded` for a Chrome/msprof JSON trace that
hands ``show`` partial traces on the way:

1. at once, the file's first stretch (``PREFIX_BYTES``) decoded here by the typed decoder: tens of
   milliseconds whatever the file's size, so the first frame never waits for the whole read;
2. while the worker process scans the file (:mod:`.chrome_scan`), a snapshot of the events it has
   handed over so far (the first range's, in file order), each at least twice the one before and
   spaced by twice the time the last one took, so snapshots never take more than a third of the
   worker's time. The worker writes each into a scratch folder (as the cache is written) and this
   side maps the newest one;
3. the whole trace, exactly what :func:`~.loader.open_profile_offloaded` returns.

The worker computes the views' statistics (:mod:`.view_stats`) of each snapshot and of the whole
trace beside it, so this process (the window's) maps ready figures and never computes them over
what the worker read.

Each partial trace carries a warning saying it is partial and how much of the file it covers, so
every view that lists warnings (the info line, Summary) says so.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

import msgspec

from studio.core.jobs import CancelToken, Progress, relay
from studio.tools.profiler import cache, view_stats
from studio.tools.profiler.model import Trace, add_warning
from studio.tools.profiler.view_stats import ViewStats

# The first stretch, decoded in this process at once: ~1.2k events. Its decode and statistics hold
# the window's interpreter, and so its GUI thread, while the first frame is painted: with 1 MB
# (~5k events) 45 ms (16 + 29 ms warm) on an idle core and up to 200 ms on a loaded machine; with
# 256 KB 10 ms. A thousand events fill the first frame as well as five.
PREFIX_BYTES = 256 << 10
_STEP = "step-"
_FINAL = "final-stats"  # the whole trace's statistics, in the scratch folder


@dataclass
class PartialRead:
    """A trace of the first ``covered`` bytes of a file of ``total`` bytes, ``read`` bytes scanned."""

    trace: Trace
    covered: int
    read: int
    total: int
    stats: ViewStats | None = None  # the views' statistics, when the worker computed them

    @property
    def estimated_events(self) -> int:
        """The events the whole file holds, estimated from the bytes per event read so far."""
        return int(self.trace.size * self.total / max(1, self.covered))

    def band_text(self) -> str:
        """``read 34 % (120 of 350 MB) · 41,203 events shown, about 1.2 M in all (estimated ...)``."""
        return (f"reading: {self.read / max(1, self.total):.0%} read ({self.read / 1e6:,.0f} of "
                f"{self.total / 1e6:,.0f} MB) · {self.trace.size:,} events shown (the first "
                f"{self.covered / max(1, self.total):.0%} of the file), about {_count(self.estimated_events)} in all "
                f"(estimated from the bytes per event so far) · the view fills in as the rest is read")


def _count(n: int) -> str:
    return f"{n / 1e6:.1f} M" if n >= 1_000_000 else f"{n:,}"


def mark_partial(trace: Trace, covered: int, total: int) -> None:
    """Say in ``trace``'s warnings that it holds only the events of the file's first ``covered`` bytes."""
    add_warning(trace.facts, f"partial: only the events of the first {covered / max(1, total):.0%} of the file "
                             f"are read so far; counts and statistics cover them only until the read completes")


def first_stretch(path: Path, limit: int = PREFIX_BYTES) -> PartialRead | None:
    """The events of the first ``limit`` bytes of the trace at ``path`` (levels of detail built),
    or None: a file that small, not an event array, or nothing readable in that stretch."""
    from studio.tools.profiler.builder import TraceBuilder
    from studio.tools.profiler.chrome_decode import _EVENT_END, Event
    from studio.tools.profiler.chrome_events import add_events
    from studio.tools.profiler.chrome_scan import _events_span
    from studio.tools.profiler.loader import add_trace_facts, with_lod

    total = path.stat().st_size
    if total <= limit:
        return None
    with path.open("rb") as handle:
        head = handle.read(limit)
    where = _events_span(head)
    if where is None:
        return None
    first = where[0]
    ends = [m.start() + 1 for m in _EVENT_END.finditer(head, first)]
    events = None
    for end in reversed(ends[-8:]):  # a "}," inside an event's args is not its end: try the one before
        try:
            events = msgspec.json.decode(b"[" + head[first:end] + b"]", type=list[Event])
            break
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    if not events:
        return None
    builder = TraceBuilder()
    add_events(builder, events, path)
    if not builder.slice_count:
        return None
    trace = builder.build(source=str(path))
    add_trace_facts(trace)
    mark_partial(trace, end, total)
    return PartialRead(with_lod(trace), end, end, total)


class _Snapshots:
    """The worker's ``on_partial``: writes a snapshot of the builder into ``folder`` now and then."""

    def __init__(self, folder: Path, source: str, shown: int) -> None:
        self.folder, self.source, self.last, self.ready_at, self.seq = folder, source, shown, 0.0, 0
        self.started = time.perf_counter()  # made just before the read starts
        self.seconds_per_slice = 0.0  # what the last snapshot cost, per slice

    def __call__(self, builder, covered: int, read: int, total: int) -> None:
        from studio.tools.profiler.loader import add_trace_facts, with_lod

        count = builder.slice_count
        now = time.perf_counter()
        if count < 2 * self.last or now < self.ready_at:
            return
        if scan_ends_first(self.seconds_per_slice * count, read, total, now - self.started):
            return
        began = time.perf_counter()
        trace = builder.snapshot(source=self.source)
        add_trace_facts(trace)
        mark_partial(trace, covered, total)
        with_lod(trace)
        self.seq += 1
        name = f"{_STEP}{self.seq:05d}-{covered}-{read}-{total}"
        # The views' statistics are computed here, in the worker, and written beside the snapshot:
        # the window's process only maps them (computed there they held its interpreter, and so
        # its GUI thread, for tens to hundreds of ms a snapshot).
        tmp = cache.store_into(self.folder / f".tmp-{name}", trace)
        if tmp is not None:
            view_stats.save(view_stats.compute(trace), tmp)
            tmp.rename(self.folder / name)
        self.last = max(count, 1)
        cost = time.perf_counter() - began
        self.seconds_per_slice = cost / self.last
        self.ready_at = time.perf_counter() + 2 * cost


def scan_ends_first(snapshot_s: float, read: int, total: int, elapsed_s: float) -> bool:
    """Whether the scan, at the rate it has read ``read`` of ``total`` bytes in ``elapsed_s``, ends
    before a snapshot estimated to take ``snapshot_s`` would be ready. The whole trace then follows
    soon after, and the snapshot would only delay it: on 10M events, the one of 4M slices taken near
    the scan's end cost 0.7-2.7 s of the worker's main thread and cores. With no estimate yet
    (the first snapshot), False."""
    if snapshot_s <= 0 or read <= 0 or elapsed_s <= 0:
        return False
    return (total - read) * elapsed_s / read < snapshot_s


def parse_growing(path: str, folder: str, shown: int = 0, piece_bytes: int | None = None,
                  ranges: int | None = None, cancel: CancelToken | None = None
                  ) -> Generator[Progress, None, tuple[str, bool]]:
    """Worker-process side of :func:`open_growing`: :func:`~.loader.parse_to_cache`, writing
    snapshots of what is read into ``folder`` on the way (once the read has at least twice
    ``shown`` slices). ``piece_bytes``/``ranges`` force the scanner's piece size and range count
    (tests; None: the reader's own choice)."""
    from studio.tools.profiler.loader import parse_to_cache

    options = {"on_partial": _Snapshots(Path(folder), str(path), shown), "ranges": ranges}
    if piece_bytes:
        options.update(chunk_bytes=piece_bytes, scan=True)
    final = Path(folder) / _FINAL  # the whole trace's statistics too, so the window only swaps them in
    done, temporary = yield from parse_to_cache(path, cancel, read_options=options,
                                                beside=lambda trace: view_stats.save(view_stats.compute(trace), final))
    if view_stats.load(final) is None:  # a cached source: nothing was parsed
        yield Progress(None, "statistics")
        whole = cache.load_folder(Path(done))
        if whole is not None:
            view_stats.save(view_stats.compute(whole), final)
    return done, temporary


Show = Callable[[PartialRead], None]


def open_growing(path: Path | str, cancel: CancelToken | None = None, show: Show | None = None, *,
                 prefix_bytes: int = PREFIX_BYTES, piece_bytes: int | None = None, ranges: int | None = None
                 ) -> Generator[Progress, None, tuple[Trace, ViewStats | None]]:
    """:func:`~.loader.open_profile_offloaded`, calling ``show`` with partial traces of a Chrome
    trace as it is read (see the module docstring); other sources, cached or small ones, as there.
    Returns the trace and, when the worker read it, the views' statistics it computed (else None:
    the caller computes them)."""
    from studio.core import formats
    from studio.core.workers import WorkerUnavailable, run_in_worker
    from studio.tools.profiler.chrome_reader import CHROME_TRACE
    from studio.tools.profiler.loader import OFFLOAD_BYTES, finish_offloaded, open_profile, open_profile_offloaded

    path = Path(path)
    cached = cache.load(path) if path.is_file() else None
    if (show is None or cached is not None or not path.is_file() or path.stat().st_size < OFFLOAD_BYTES
            or formats.detect(path).format is not CHROME_TRACE):
        return (yield from open_profile_offloaded(path, cancel)), None
    yield Progress(None, f"reading the first {prefix_bytes >> 10:,} KB of {path.name}")
    first = first_stretch(path, prefix_bytes)
    if first is not None:
        show(first)
    scratch = cache.scratch_folder("partial")  # beside the cache: the snapshots link the args file
    try:
        job = run_in_worker("studio.tools.profiler.partial_read:parse_growing", str(path), str(scratch),
                            first.trace.size if first is not None else 0, piece_bytes, ranges, cancel=cancel)
        shown = [""]  # the name of the snapshot shown last

        def passed_on(progress: Progress):
            shown[0] = _show_newest(scratch, shown[0], show)
            yield progress

        folder, temporary = yield from relay(job, passed_on)
        final = view_stats.load(scratch / _FINAL)
    except WorkerUnavailable:
        return (yield from open_profile(path, cancel, use_cache=False)), None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the mappings shown keep their data (POSIX)
    return (yield from finish_offloaded(path, folder, temporary)), final


def _show_newest(scratch: Path, shown: str, show: Show) -> str:
    """Map and show the newest snapshot in ``scratch`` not shown yet (older ones are deleted);
    returns the name of the one shown last."""
    steps = sorted(p.name for p in scratch.iterdir() if p.name.startswith(_STEP))
    if not steps or steps[-1] == shown:
        return shown
    for old in steps[:-1]:
        shutil.rmtree(scratch / old, ignore_errors=True)
    trace = cache.load_folder(scratch / steps[-1])
    if trace is None:  # not readable (yet): the next turn tries again
        return shown
    covered, read, total = (int(v) for v in steps[-1].split("-")[2:5])
    show(PartialRead(trace, covered, read, total, view_stats.load(scratch / steps[-1])))
    return steps[-1]
