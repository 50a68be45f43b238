"""studio profile cluster --free, fast and kept: a text export's events decoded into the few fields
the labels read give the gaps and labels a plain ``json`` read gives (on every real text export
and the synthetic cluster); each rank's labelled gaps are kept in Studio's cache folder, read back
unchanged, missed when the file changes, and labelled in parallel processes with the same result."""

from __future__ import annotations

import json
import os
import shutil
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from studio.core.errors import UserError
from studio.core.serial import to_json
from studio.tools.profiler.cluster import free_cache, free_ranks
from studio.tools.profiler.cluster.free_gaps import open_free
from studio.tools.profiler.cluster.free_labels import label_gaps
from studio.tools.profiler.cluster.free_sources import DeviceTimeline, merge
from tests.tools import synthetic_cluster

TEXT2 = "cluster_pytorch/msinsight_text_2rank_level2/level2"


def _ns(value) -> int:
    """µs as integer ns, cut below the ns (Decimal: exact for the file's digits)."""
    return int(Decimal(str(value)) * 1000)


def json_timeline(path: Path) -> DeviceTimeline:
    """The device timeline read with the json module, event by event (the reference)."""
    events = json.loads(path.read_text())
    if isinstance(events, dict):
        events = events["traceEvents"]
    process = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    xs = [(process.get(e.get("pid")), e) for e in events if e.get("ph") == "X"]

    def span(e) -> tuple[int, int]:
        return _ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0))

    busy = [span(e) for p, e in xs if p == "Overlap Analysis" and e["name"] in ("Computing", "Communication")]
    cann = {e["args"]["connection_id"]: span(e) for p, e in xs if p == "CANN" and "connection_id" in (e.get("args") or {})}
    python = {(e.get("tid"), e["ts"]): span(e) for p, e in xs if p == "Python"}
    starts = {e["id"]: (e.get("tid"), e["ts"]) for e in events if e.get("ph") == "s" and e.get("cat") == "async_npu"}
    op_of = {(e.get("tid"), e["ts"]): python.get(starts[e["id"]]) for e in events
             if e.get("ph") == "f" and e.get("cat") == "async_npu" and e["id"] in starts}
    rows = []
    for p, e in xs:
        if p != "Ascend Hardware":
            continue
        args = e.get("args") or {}
        kind = e["name"] if e["name"].isupper() and e["name"][0].isalpha() else str(args.get("Task Type", e["name"]))
        c, o = cann.get(args.get("connection_id")), op_of.get((e.get("tid"), e["ts"]))
        rows.append((*span(e), kind, c, o))
    rows.sort(key=lambda r: r[0])
    b = np.array(busy, np.int64).reshape(-1, 2)
    column = lambda f, kind=np.int64: np.array([f(r) for r in rows], kind)  # noqa: E731
    return DeviceTimeline("trace_view.json", *merge(b[:, 0], b[:, 1]), column(lambda r: r[2], object),
                          column(lambda r: r[0]), column(lambda r: r[1]),
                          column(lambda r: r[3][0] if r[3] else 0), column(lambda r: r[3][1] if r[3] else 0),
                          column(lambda r: r[4][0] if r[4] else 0), column(lambda r: r[4][1] if r[4] else 0),
                          column(lambda r: r[3] is not None, bool), column(lambda r: r[4] is not None, bool))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """The 3-rank synthetic cluster as a text export (its slow host and device known by construction)."""
    return synthetic_cluster.build(tmp_path_factory.mktemp("free_text") / "synthetic", launch_lag_rank=0,
                                   export="text")


@pytest.fixture(scope="module")
def repeated(real_profiles, tmp_path_factory) -> Path:
    """4 ranks of the benchmark's synthesized cluster: the real text export's steps repeated (~20k events)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_cluster_scale import synthesize

    out = tmp_path_factory.mktemp("free_repeated") / "ranks"
    synthesize(out, 20_000, ranks=4)
    return out


def test_fast_read_equals_json_read_on_every_text_export(real_profiles, synthetic, repeated):
    real = sorted(real_profiles.rglob("trace_view.json"))
    assert len(real) >= 2, "no real text export found"
    with_gaps = 0
    for path in real + sorted(repeated.glob("rank*/*/trace_view.json")) + sorted(synthetic.rglob("trace_view.json")):
        fast, reference = free_ranks.read_timeline(path), json_timeline(path)
        assert len(reference.task_ts) > 0 and reference.has_py.any() and reference.has_cann.any(), path
        for name in DeviceTimeline.__dataclass_fields__:
            if name != "source":
                assert np.array_equal(getattr(fast, name), getattr(reference, name)), (path, name)
        ours, theirs = label_gaps(fast), label_gaps(reference)
        assert ours == theirs, path
        with_gaps += bool(ours)
    # the synthetic ranks have no Overlap Analysis lane (no gaps: their columns are compared above)
    assert with_gaps == len(real) + 4


def test_labelled_gaps_kept_in_the_cache_and_missed_when_the_file_changes(real_profiles, tmp_path, monkeypatch):
    folder = shutil.copytree(real_profiles / TEXT2, tmp_path / "text2")
    before_files = sorted(p for p in folder.rglob("*"))
    first = to_json(open_free(folder, workers=1))
    entries = sorted(free_cache.cache_root().glob("*.msgpack"))
    assert len(entries) == 2 and str(free_cache.cache_root()).startswith(os.environ["STUDIO_HOME"])
    assert sorted(p for p in folder.rglob("*")) == before_files  # nothing written beside the user's files

    def no_read(source):
        raise AssertionError(f"{source} read again")

    monkeypatch.setattr(free_ranks, "read_timeline", no_read)
    assert to_json(open_free(folder, workers=1)) == first  # from the cache, the same report
    monkeypatch.undo()

    # rank 1's trace changes: its longest free gap is filled with a Computing slice
    trace = folder / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"
    events = json.loads(trace.read_text())
    overlap = next(e["pid"] for e in events if e.get("ph") == "M" and e.get("args", {}).get("name") == "Overlap Analysis")
    longest = max((g for g in first["gaps"] if g["rank"] == 1), key=lambda g: g["duration_us"])
    start = Decimal(longest["start_ns"]) / 1000
    events.append({"ph": "X", "name": "Computing", "pid": overlap, "tid": 0, "ts": str(start),
                   "dur": float(Decimal(longest["duration_us"]))})
    trace.write_text(json.dumps(events))
    second = to_json(open_free(folder, workers=1))
    ours = [g for g in second["gaps"] if g["rank"] == 1]
    assert len(ours) == len([g for g in first["gaps"] if g["rank"] == 1]) - 1
    assert longest["start_ns"] not in {g["start_ns"] for g in ours}
    assert [g for g in second["gaps"] if g["rank"] == 0] == [g for g in first["gaps"] if g["rank"] == 0]
    # and the changed rank equals a read with no cache at all
    assert free_cache.load(trace).gaps == label_gaps(json_timeline(trace))


def test_parallel_labelling_equals_serial_and_an_error_names_the_file(synthetic, tmp_path, monkeypatch):
    serial = to_json(open_free(synthetic, workers=1))
    for entry in free_cache.cache_root().glob("*.msgpack"):
        entry.unlink()
    monkeypatch.setattr(free_ranks, "PARALLEL_BYTES", 0)
    calls = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: calls.append(1) or real_fork())
    parallel = to_json(open_free(synthetic, workers=2))
    assert len(calls) == 2 and parallel == serial
    assert len(list(free_cache.cache_root().glob("*.msgpack"))) == 3

    broken = shutil.copytree(synthetic, tmp_path / "broken")
    (broken / "rank2_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json").write_text('[{"ph": "X", "ts": ')
    with pytest.raises(UserError) as caught:
        open_free(broken, workers=2)
    assert "trace_view.json cannot be read as a trace" in str(caught.value)
