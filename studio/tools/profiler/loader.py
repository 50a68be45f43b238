"""Open any profile Studio reads: sniff it, read it (or take it from the cache), add levels of detail.

This is the one entry point the CLI and the panel use::

    trace = run_job(open_profile(path))

Formats: Chrome/msprof/PyTorch timelines (JSON), ONNX Runtime profiles, msprof ``PROF_*`` and
PyTorch-NPU ``ASCEND_PROFILER_OUTPUT`` folders, single summary CSVs, msprof SQLite databases, and
the folders ``studio profile run`` writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from studio.core import formats
from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.tools.profiler import cache
from studio.tools.profiler.lod import build_lod
from studio.tools.profiler.model import Trace


def open_profile(path: Path | str, cancel: CancelToken | None = None, use_cache: bool = True,
                 store: bool = True, lod: bool = True, read_options: dict | None = None
                 ) -> Generator[Progress, None, Trace]:
    """Read ``path`` into a Trace with its levels of detail attached (``lod``; statistics alone
    do without them: they cost a third of the parse of a big trace).

    With ``use_cache`` a cached copy is used when current; with ``store`` too, a fresh parse is
    written to the cache before returning. The panel passes ``store=False`` and writes the cache
    with :func:`store_cache` after the first frame is on screen (writing ~250 MB for a 1M-event
    trace takes longer than drawing it). ``read_options`` go to the Chrome trace reader
    (:func:`~.chrome_reader.read_chrome_trace`) when the source is one, else are not used.
    """
    path = Path(path)
    if not path.exists():  # before the cache, whose key stats the file
        raise UserError("File not found", path, "Check the path: give a trace JSON, an ORT profile, a "
                        "profile folder, an msprof CSV or database.")
    if use_cache:
        cached = cache.load(path)
        if cached is not None:
            yield Progress(1.0, f"{path.name} (from cache)")
            return with_lod(cached) if lod else cached
    detected = formats.detect(path)
    if detected.format.panel != formats.PROFILER:
        raise UserError(f"The profiler does not read {detected.format.label} files", path,
                        "Open a trace JSON, an ONNX Runtime profile, a PROF_* or ASCEND_PROFILER_OUTPUT "
                        "folder, or an msprof summary CSV.")
    from studio.tools.profiler.chrome_reader import CHROME_TRACE, read_chrome_trace

    if read_options and detected.format is CHROME_TRACE:
        trace = yield from read_chrome_trace(path, cancel, **read_options)
    else:
        trace = yield from formats.open_job(detected, cancel)
    if cancel:
        cancel.raise_if_cancelled()
    add_trace_facts(trace)
    if lod:
        yield Progress(0.9, "building levels of detail")
        with_lod(trace)
    if use_cache and store:
        yield from store_cache(path, trace)
    yield Progress(1.0, f"{path.name}: {trace.size:,} slices")
    return trace


def with_lod(trace: Trace) -> Trace:
    """``trace`` with its levels of detail (built now when a cache entry was stored without them)."""
    if trace.lod is None:
        trace.lod = build_lod(trace.start, trace.dur, trace.track, trace.depth)
    return trace


def open_profile_offloaded(path: Path | str, cancel: CancelToken | None = None
                           ) -> Generator[Progress, None, Trace]:
    """:func:`open_profile` for the GUI: the parsing runs in a worker process, never in the GUI's.

    Decoding holds the interpreter lock for long stretches (msgspec on 16 MB chunks, numpy), and a
    thread doing it makes the GUI thread wait. So a source bigger than ``OFFLOAD_BYTES`` is read
    by a worker process (which uses every core for a big trace), written to the column cache
    there, and memory-mapped here. Progress, cancel (which kills the worker) and errors are those
    of :func:`open_profile`. A cached source is mapped at once; a small one is read in this thread.
    """
    path = Path(path)
    cached = cache.load(path)
    if cached is not None and cached.lod is not None:
        yield Progress(1.0, f"{path.name} (from cache)")
        return cached
    if _source_bytes(path) < OFFLOAD_BYTES:
        return (yield from open_profile(path, cancel, use_cache=False))
    from studio.core.workers import WorkerUnavailable, run_in_worker

    try:
        folder, temporary = yield from run_in_worker("studio.tools.profiler.loader:parse_to_cache", str(path),
                                                     cancel=cancel)
    except WorkerUnavailable:
        import logging

        logging.getLogger(__name__).warning("no worker process; reading %s in this process", path)
        return (yield from open_profile(path, cancel, use_cache=False))
    return (yield from finish_offloaded(path, folder, temporary))


def finish_offloaded(path: Path, folder: str, temporary: bool) -> Generator[Progress, None, Trace]:
    """The trace a worker parsed into ``folder`` (see :func:`parse_to_cache`), mapped here."""
    trace = cache.load_folder(Path(folder))
    if temporary:  # the cache could not be written: the worker used a scratch folder
        import shutil

        shutil.rmtree(folder, ignore_errors=True)  # the mappings keep the data (POSIX)
    if trace is None:
        raise UserError("The parsed profile could not be read back from the cache", folder,
                        "Check the disk is not full, then open the profile again.")
    yield Progress(1.0, f"{path.name}: {trace.size:,} slices")
    return trace


OFFLOAD_BYTES = 4 << 20  # below this a parse holds the interpreter for a few tens of ms at most
PARK_SLICES = 1 << 20  # from this many slices a worker parks the columns the levels do not read (cache.park_columns)


def parse_to_cache(path: str, cancel: CancelToken | None = None, read_options: dict | None = None,
                   beside: Callable[[Trace], None] | None = None) -> Generator[Progress, None, tuple[str, bool]]:
    """Worker-process side of :func:`open_profile_offloaded`: parse, write the cache, return
    (folder, whether it is a scratch folder the caller deletes). ``read_options``: see
    :func:`open_profile`. ``beside(trace)`` runs on a thread of its own with the parsed trace
    while its levels of detail are built and the cache is written (both mostly numpy, which lets
    go of the interpreter: on 10M slices the views' statistics took 1.4 s after them, on the
    other core they take none); it must only read the trace. Not called for a cached source."""
    cached = cache.load(Path(path))
    if cached is not None and cached.lod is None:  # stored by `studio profile stats`: add the levels only
        yield Progress(0.5, "building levels of detail")
        folder = cache.add_lod(Path(path), with_lod(cached))
        if folder is not None:
            return str(folder), False
    # The args go to a named file and the columns the levels of detail do not read are parked
    # there before they are built; the cache links those files rather than writes them again.
    with cache.spill_folder() as spill:
        options = dict(read_options or {}, spill_dir=spill) if spill is not None else read_options
        trace = yield from open_profile(path, cancel, use_cache=False, lod=False, read_options=options)
        if spill is not None and trace.size >= PARK_SLICES:
            cache.park_columns(trace, spill)
        with _beside(beside, trace):
            yield Progress(0.9, "building levels of detail")
            with_lod(trace)
            yield Progress(0.95, "writing the cache")
            folder = cache.store(Path(path), trace)
    if folder is not None:
        return str(folder), False
    import tempfile

    scratch = cache.store_into(Path(tempfile.mkdtemp(prefix="studio-trace-")), trace)
    if scratch is None:
        raise UserError("Cannot write the parsed profile to disk", tempfile.gettempdir(),
                        "Free some disk space (a big trace needs about its own size), then open it again.")
    return str(scratch), True


@contextlib.contextmanager
def _beside(work: Callable[[Trace], None] | None, trace: Trace) -> Iterator[None]:
    """Run ``work(trace)`` on a thread while the block runs; wait for it (and raise what it raised) after."""
    if work is None:
        yield
        return
    with ThreadPoolExecutor(1, thread_name_prefix="beside-cache") as pool:
        done = pool.submit(work, trace)
        yield
        done.result()


def _source_bytes(path: Path) -> int:
    """Size of a file, or of the files in a folder (the first 5,000)."""
    try:
        if path.is_dir():
            total = 0
            for i, item in enumerate(path.rglob("*")):
                if i >= 5000:
                    break
                if item.is_file():
                    total += item.stat().st_size
            return total
        return path.stat().st_size
    except OSError:
        return 0


def add_trace_facts(trace: Trace) -> None:
    """Facts the events themselves tell: when the trace starts, which processes are host or device."""
    import datetime as dt

    if 1e18 < trace.origin_ns < 4e18:  # absolute wall-clock nanoseconds (msprof, ORT, local runs)
        start = dt.datetime.fromtimestamp(trace.origin_ns / 1e9, dt.timezone.utc)
        trace.facts.setdefault("trace start", start.strftime("%Y-%m-%d %H:%M:%S UTC"))
    labelled: dict[str, set[str]] = {}
    for track in trace.tracks:
        if track.labels:
            labelled.setdefault(track.labels, set()).add(track.process)
    for label, processes in sorted(labelled.items()):
        trace.facts.setdefault(f"{label} processes", ", ".join(sorted(processes)))
    _table_facts(trace)


def _table_facts(trace: Trace) -> None:
    """What the summary tables say in one line each: device task types, step time breakdown."""
    from collections import Counter

    from studio.tools.profiler.csv_tables import number

    summary = trace.tables.get("op_summary")
    if summary is not None and "Task Type" in summary.columns:
        kinds = Counter(v for v in summary.column("Task Type") if v and v != "N/A")
        if kinds:
            trace.facts.setdefault("device tasks by type", ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    steps = trace.tables.get("step_trace")
    if steps is not None:
        parts = []
        for column in ("Computing", "Communication(Not Overlapped)", "Overlapped", "Free"):
            if column in steps.columns:
                total = sum(number(v) or 0.0 for v in steps.column(column))
                parts.append(f"{column.lower()} {total / 1000:,.2f} ms")
        trace.facts.setdefault(f"step time ({len(steps.rows)} steps)", ", ".join(parts))


def store_cache(path: Path | str, trace: Trace, cancel: CancelToken | None = None
                ) -> Generator[Progress, None, Path | None]:
    """Write ``trace`` to the cache of ``path`` (a job of its own, so it can run after display)."""
    yield Progress(0.95, "writing the cache")
    return cache.store(Path(path), trace)
