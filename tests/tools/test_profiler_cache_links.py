"""A big trace's args and the columns its levels of detail do not read are written once.

A worker that reads a trace into the cache spills its args to a named file and parks four
columns beside it; the cache entry (and a snapshot of a read in progress) links those files
rather than writing their bytes again. The compiled scanner copies no args at all: its slices
read them from the trace file when selected, and say so when that file changed since. Every
figure read back is checked against the events as ``json`` reads them, not against another
Studio reader.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.profiler import builder as builder_module
from studio.tools.profiler import cache, chrome_scan, loader
from studio.tools.profiler.args_blob import ArgsBlob
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.chrome_reader import read_chrome_trace


def _write_trace(path: Path, n: int) -> list[dict]:
    """``n`` complete events on 3 threads (args of varied size), written as a bare array; returns them."""
    rng = np.random.default_rng(5)
    clocks = [0, 0, 0]
    events = []
    for i in range(n):
        tid = i % 3
        clocks[tid] += int(rng.integers(1, 40))
        dur = int(rng.integers(1, 30))
        events.append({"ph": "X", "name": f"op{i % 11}", "cat": "k", "pid": 1, "tid": tid, "ts": clocks[tid],
                       "dur": dur, "args": {"i": i, "pad": "y" * int(rng.integers(0, 60))}})
        clocks[tid] += dur
    path.write_text("[" + ",\n".join(json.dumps(e) for e in events) + "]")
    return events


def _expected(events: list[dict]) -> list[dict]:
    """The events in the trace's slice order (lane, start, longest first), computed here."""
    return sorted(events, key=lambda e: (e["tid"], e["ts"], -e["dur"]))


def _assert_reads_back(trace, events: list[dict]) -> None:
    expected = _expected(events)
    assert trace.size == len(expected)
    assert [trace.names[int(v)] for v in trace.name] == [e["name"] for e in expected]
    assert [int(s) + trace.origin_ns for s in trace.start] == [e["ts"] * 1000 for e in expected]
    assert [trace.slice_args(i) for i in range(trace.size)] == [e["args"] for e in expected]


def test_a_worker_read_links_its_args_and_parked_columns_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STUDIO_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(builder_module, "NAMED_SPILL_BYTES", 4096)  # the args go to the named file at once
    monkeypatch.setattr(loader, "PARK_SLICES", 1)
    spill = tmp_path / "spill"
    spill.mkdir()
    kept = {}

    class _Kept:  # the scratch folder, kept (not deleted) so its files can be compared with the entry's
        def __enter__(self):
            return spill

        def __exit__(self, *exc):
            kept.update({p.name: p.stat().st_ino for p in spill.iterdir()})

    monkeypatch.setattr(cache, "spill_folder", _Kept)
    path = tmp_path / "t.json"
    events = _write_trace(path, 4000)
    folder, temporary = run_job(loader.parse_to_cache(str(path)))
    assert not temporary
    for name in ("args.bin", *(f"{c}.npy" for c in cache.PARKED)):
        assert os.stat(Path(folder) / name).st_ino == kept[name], name  # linked, not written again
    _assert_reads_back(cache.load_folder(Path(folder)), events)


def test_a_snapshot_links_the_args_file_that_keeps_growing(tmp_path, monkeypatch):
    monkeypatch.setattr(builder_module, "NAMED_SPILL_BYTES", 2000)  # spilled now and then, as a big read is
    events = [{"ts": 10 * i, "dur": 5, "tid": i % 2, "name": f"n{i % 4}", "args": {"i": i, "s": "z" * (i % 50)}}
              for i in range(3000)]
    growing = TraceBuilder()
    growing.spill_path = tmp_path / "args.bin"
    for e in events:
        growing.add_slice(e["ts"] * 1000, e["dur"] * 1000, growing.track_id(1, e["tid"]), e["name"],
                          args=json.dumps(e["args"]).encode())
        if e["args"]["i"] == 1999:
            snap = cache.store_into(tmp_path / "snap", growing.snapshot("x"))
    assert snap is not None and os.stat(snap / "args.bin").st_ino == os.stat(tmp_path / "args.bin").st_ino
    whole = cache.store_into(tmp_path / "whole", growing.build("x"))
    for folder, part in ((snap, events[:2000]), (whole, events)):
        trace = cache.load_folder(folder)
        expected = _expected(part)
        assert [trace.slice_args(i) for i in range(trace.size)] == [e["args"] for e in expected]


def _held_args(monkeypatch) -> list:
    """Spy on the scanner's ranges: (begin, [does each piece hold its args gathered]) per range."""
    held = []
    real = chrome_scan._scan_range

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        held.append((result.begin, [None if p is None else p.blob is not None for p in result.pieces]))
        return result

    monkeypatch.setattr(chrome_scan, "_scan_range", spy)
    return held


@pytest.mark.skipif(chrome_scan.compiled() is None, reason="numba is not installed")
def test_a_scanned_trace_keeps_its_args_in_the_file(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    events = _write_trace(path, 6000)
    held = _held_args(monkeypatch)
    monkeypatch.setenv("STUDIO_HOME", str(tmp_path / "home"))
    folder, _temporary = run_job(loader.parse_to_cache(str(path), read_options={"ranges": 3, "chunk_bytes": 4096,
                                                                                  "scan": True}))
    assert len(held) == 3 and all(pieces and not any(pieces) for _, pieces in held)  # nothing gathered
    assert os.path.getsize(Path(folder) / "args.bin") == 0  # not one args byte written again
    trace = cache.load_folder(Path(folder))
    _assert_reads_back(trace, events)
    # The file rewritten in place since (same size, other bytes): no args from it, and a reason.
    text = path.read_bytes()
    path.write_bytes(text.replace(b'"pad": "', b'"pad": "#', 1)[:len(text)])
    os.utime(path, ns=(1, 1))
    shown = trace.slice_args(0)
    assert list(shown) == ["not shown"] and "changed since it was read" in shown["not shown"]
    path.unlink()
    assert "cannot be opened any more" in trace.slice_args(1)["not shown"]


@pytest.mark.skipif(chrome_scan.compiled() is None, reason="numba is not installed")
def test_a_trace_that_changes_as_it_is_read_has_its_args_copied(tmp_path, monkeypatch):
    """Its size on disk differs from what was read: the first range gathers as it scans, the others when fed."""
    path = tmp_path / "t.json"
    events = _write_trace(path, 6000)
    held = _held_args(monkeypatch)
    monkeypatch.setattr(chrome_scan.SourceArgs, "of", classmethod(lambda cls, path, size: None))
    trace = run_job(read_chrome_trace(path, ranges=3, chunk_bytes=4096, scan=True))
    held.sort()
    assert len(held) == 3 and all(len(pieces) > 2 for _, pieces in held)
    assert held[0][1][-1]  # the first range's newest piece is not fed while it scans: gathered in its thread
    assert all(pieces.count(False) == len(pieces) for _, pieces in held[1:])  # later ranges: gathered when fed
    assert not isinstance(trace.args_blob, ArgsBlob)
    _assert_reads_back(trace, events)


def test_levels_sharing_arrays_are_written_once(tmp_path):
    # Lanes of back-to-back slices: a coarser level merges little and shares the finer one's arrays.
    b = TraceBuilder()
    for i in range(20_000):
        b.add_slice(i * 1000, 900, b.track_id(1, i % 4), f"n{i % 3}")
    from studio.tools.profiler.loader import with_lod

    trace = with_lod(b.build("x"))
    shared = [(i, c) for i, level in enumerate(trace.lod.levels[1:], 1) for c in ("end", "rep", "count")
              if getattr(level, c) is getattr(trace.lod.levels[i - 1], c)]
    assert shared  # the case this test is about
    folder = cache.store_into(tmp_path / "entry", trace)
    for i, column in shared:
        assert os.stat(folder / f"lod{i}_{column}.npy").st_ino == os.stat(folder / f"lod{i - 1}_{column}.npy").st_ino
    back = cache.load_folder(folder)
    for mine, theirs in zip(trace.lod.levels, back.lod.levels):  # every level reads back as built
        for column in ("start", "end", "end_max", "rep", "count", "bounds"):
            assert np.array_equal(getattr(mine, column), getattr(theirs, column))
