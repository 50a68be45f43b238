"""Chrome Trace Event Format reader (chrome://tracing, msprof timelines, PyTorch trace_view.json).

Events come typed from :mod:`studio.tools.profiler.chrome_decode`, chunk by chunk, and go into
the trace builder through :mod:`studio.tools.profiler.chrome_events`, here or in the forked
processes of :mod:`studio.tools.profiler.chrome_parallel`.
"""

from __future__ import annotations

import gc
import mmap
import os
import re
from collections.abc import Generator
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import PROFILER, FileFormat, json_text
from studio.core.jobs import CancelToken, Progress
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.chrome_decode import CHUNK_BYTES, DECODE_BYTES, iter_event_chunks, map_or_read
from studio.tools.profiler.chrome_events import add_chunk, finish_events
from studio.tools.profiler.chrome_parallel import cores, plan_ranges, read_ranges
from studio.tools.profiler.chrome_scan import SCAN_BYTES, SCAN_MIN_BYTES, scan_chrome_trace
from studio.tools.profiler.model import Trace

PARALLEL_MIN_BYTES = 2 * CHUNK_BYTES  # smaller files decode faster than processes start


def read_chrome_trace(path: Path, cancel: CancelToken | None = None,
                      builder: TraceBuilder | None = None, *, build: bool = True,
                      ranges: int | None = None, chunk_bytes: int | None = None, scan: bool | None = None,
                      on_partial=None, spill_dir: Path | None = None) -> Generator[Progress, None, Trace | TraceBuilder]:
    """Read a Chrome trace JSON file into a Trace (or into ``builder`` when ``build`` is False,
    so msprof slices can be merged into one trace).

    A bare array is decoded in chunks of about ``DECODE_BYTES`` cut between top-level events, so
    decoded objects never pile up (memory stays near the file size plus the columns), progress is
    real, and cancel works between chunks. A file of at least ``PARALLEL_MIN_BYTES`` is cut into
    ``ranges`` (default: one per core; 1 = this process only) decoded by forked processes
    (:mod:`~studio.tools.profiler.chrome_parallel`).

    Where numba is installed the compiled scanner (:mod:`~studio.tools.profiler.chrome_scan`)
    reads the file instead, in ``ranges`` threads, with the same result; ``chunk_bytes`` is then the
    bytes per kernel call. ``scan``: None uses it for files of at least ``SCAN_MIN_BYTES`` (below,
    loading numba costs more than it saves), True for any file, False never. The decoder above is
    what it leaves to, and the whole path where numba is missing. ``on_partial``: see
    :func:`~studio.tools.profiler.chrome_scan.scan_chrome_trace` (called by the scanner only).
    ``spill_dir``: a folder (on the cache's file system) where a big trace's args go as a named
    file, which the cache then links rather than copies (see :func:`~.cache.store_into`).
    """
    path = Path(path)
    yield Progress(None, f"reading {path.name}")
    try:
        data = map_or_read(path)
    except OSError as exc:
        raise UserError(f"Cannot read trace: {exc.strerror}", path, "Check the file exists and is readable.") from exc
    builder = builder if builder is not None else TraceBuilder()
    if spill_dir is not None and builder.spill_path is None:
        builder.spill_path = Path(spill_dir) / "args.bin"
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of small objects: the collector would rescan them for nothing
    try:
        merged = False
        count = cores() if ranges is None else ranges
        if scan or (scan is None and len(data) >= SCAN_MIN_BYTES):
            merged = yield from scan_chrome_trace(
                path, data, builder, cancel, threads=count, piece_bytes=chunk_bytes or SCAN_BYTES,
                min_range=CHUNK_BYTES if ranges is None else (chunk_bytes or SCAN_BYTES), on_partial=on_partial)
        chunk_bytes = chunk_bytes or DECODE_BYTES
        if not merged and count > 1 and hasattr(os, "fork") and len(data) >= (PARALLEL_MIN_BYTES if ranges is None else 0):
            plan = plan_ranges(data, count, min_range=chunk_bytes if ranges is not None else CHUNK_BYTES)
            if plan is not None:
                merged = yield from read_ranges(path, data, plan, builder, cancel, chunk_bytes)
        for done, events, note in ([] if merged else iter_event_chunks(data, path, chunk_bytes=chunk_bytes)):
            add_chunk(builder, events, note, path, cancel)
            del events
            yield Progress(0.8 * done / max(1, len(data)), f"decoding {path.name} ({done / 1e6:.0f} of {len(data) / 1e6:.0f} MB)")
        finish_events(builder, path)
        builder.name_counter_sources(path.name)
    finally:
        if gc_was_enabled:
            gc.enable()
    if isinstance(data, mmap.mmap):
        data.close()
    del data
    if not build:
        return builder
    yield Progress(0.85, "sorting and nesting slices")
    return builder.build(source=str(path))


def match_chrome_trace(path: Path, head: bytes) -> bool:
    """A Chrome trace: ``{"traceEvents": ...}`` or an array of events with a phase (``"ph"``)."""
    text = json_text(head)
    if not text:
        return False
    if text.startswith("{"):
        return '"traceEvents"' in text
    return bool(re.search(r'"ph"\s*:\s*"[A-Za-z]"', text))


CHROME_TRACE = FileFormat("chrome_trace", "Chrome trace (msprof / PyTorch timeline)", PROFILER, match_chrome_trace,
                          read_chrome_trace)
