"""Every rank of a real multi-rank folder on one timeline: each rank's lanes hold exactly what the
rank shows alone, on one clock (checked against a plain json read of each trace_view.json), the
joined levels of detail cover every slice of its own row, and decoding in parallel (one process
per core, through the cache) gives the same trace as decoding one rank after the other."""

from __future__ import annotations

import json
from decimal import Decimal
from collections import Counter

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.profiler.cluster.timeline import open_rank_timelines
from studio.tools.profiler.loader import open_profile
from studio.tools.profiler.lod import visible

TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"
DB = "cluster_pytorch/msinsight_db_2rank_level2/level2"


def lane_slices(trace, prefix: str) -> Counter:
    tracks = {t.id for t in trace.tracks if t.process.startswith(prefix)}
    keep = np.flatnonzero(np.isin(trace.track, list(tracks)))
    return Counter((trace.names[int(trace.name[i])], int(trace.start[i]) + trace.origin_ns, int(trace.dur[i]))
                   for i in keep)


@pytest.mark.parametrize("dataset", [TEXT, DB])
def test_each_rank_lane_group_is_that_rank_alone_on_one_clock(real_profiles, dataset):
    folder = real_profiles / dataset
    merged = run_job(open_rank_timelines(folder, workers=2))
    assert merged.facts["ranks"] == "2"
    for rank in (0, 1):
        alone = run_job(open_profile(folder / f"rank{rank}_ascend_pt", use_cache=False))
        assert lane_slices(merged, f"rank {rank} · ") == lane_slices(alone, "")
        assert alone.size > 1000
        ours = {(c.process, c.name) for c in merged.counters if c.process.startswith(f"rank {rank} · ")}
        assert ours == {(f"rank {rank} · {c.process}", c.name) for c in alone.counters}
    assert merged.size == sum(run_job(open_profile(folder / f"rank{r}_ascend_pt", use_cache=False)).size
                              for r in (0, 1))


def test_rank_lanes_start_where_each_trace_view_says(real_profiles):
    merged = run_job(open_rank_timelines(real_profiles / TEXT, workers=2))
    for rank in (0, 1):
        path = real_profiles / TEXT / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
        events = json.loads(path.read_text())
        complete = [e for e in events if e.get("ph") == "X"]
        first_ns = min(int(Decimal(str(e["ts"])) * 1000) for e in complete)  # msprof: a string of us
        tracks = [t.id for t in merged.tracks if t.process.startswith(f"rank {rank} · ")]
        mine = np.isin(merged.track, tracks)
        assert int(merged.start[mine].min()) + merged.origin_ns == first_ns
        assert int(mine.sum()) == len(complete)  # every complete event of the rank, in its lanes only


def test_joined_levels_cover_every_slice_in_its_own_row(real_profiles):
    merged = run_job(open_rank_timelines(real_profiles / TEXT, workers=1))
    lod = merged.lod
    assert sorted(np.asarray(lod.levels[0].rep).tolist()) == list(range(merged.size))
    span = merged.span_ns
    for level in lod.levels:
        for row in range(lod.row_track.size):
            _, _, rep, _ = visible(level, row, -1, span + 1, 0)
            assert set(merged.track[rep].tolist()) <= {int(lod.row_track[row])}
            assert set(merged.depth[rep].tolist()) <= {int(lod.row_depth[row])}
    # a frame over the whole span finds something in every row
    top = lod.level_for(span / 1600)
    assert all(visible(top, row, 0, span, span / 1600)[2].size for row in range(lod.row_track.size))


def test_parallel_decoding_through_the_cache_equals_one_after_the_other(real_profiles, studio_home):
    import shutil

    from studio.tools.profiler import cache

    parallel = run_job(open_rank_timelines(real_profiles / TEXT, workers=2))  # two processes, caches written
    again = run_job(open_rank_timelines(real_profiles / TEXT, workers=2))  # from the ranks' caches
    shutil.rmtree(cache.cache_root())
    serial = run_job(open_rank_timelines(real_profiles / TEXT, workers=1))  # here, one after the other
    for other in (parallel, again):
        assert other.size == serial.size and other.names == serial.names
        for column in ("start", "dur", "track", "depth", "name"):
            assert np.array_equal(getattr(other, column), getattr(serial, column)), column
        i = serial.size // 3
        assert other.slice_args(i) == serial.slice_args(i)
        assert [(t.process, t.name) for t in other.tracks] == [(t.process, t.name) for t in serial.tracks]


def test_msprof_device_ranks_and_ranks_without_a_timeline(real_profiles):
    legacy = real_profiles / "msprof_prof_legacy/mindinsight_2dev"
    merged = run_job(open_rank_timelines(legacy, workers=1))
    for rank, prof in ((0, "PROF_000001_20230818142704322_COJGGGCANRMICFBC"),
                       (1, "PROF_000001_20230818142704567_GQFAMHBKGODKJMLA")):
        alone = run_job(open_profile(legacy / prof, use_cache=False))
        assert alone.size and lane_slices(merged, f"rank {rank} · ") == lane_slices(alone, "")
    qwen = run_job(open_rank_timelines(real_profiles / "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2",
                                       workers=1))
    assert {t.process.split(" · ")[0] for t in qwen.tracks} == {"rank 0", "rank 2"}
    assert qwen.warnings == ["rank 1, rank 3: no timeline in the folder (only summaries such as step_trace_time.csv "
                             "or analysis.db), so no lanes"]


def test_a_ranks_warning_stays_a_warning_naming_the_rank(real_profiles, tmp_path):
    import shutil

    folder = tmp_path / "job"
    for rank in (0, 1):
        shutil.copytree(real_profiles / TEXT / f"rank{rank}_ascend_pt", folder / f"rank{rank}_ascend_pt")
    trace_view = folder / "rank1_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    trace_view.chmod(0o644)
    data = trace_view.read_bytes()
    trace_view.write_bytes(data[:len(data) // 2])  # cut off mid-array, as a copy cut short in transfer
    merged = run_job(open_rank_timelines(folder, workers=1))
    alone = run_job(open_profile(folder / "rank1_ascend_pt", use_cache=False))
    assert alone.warnings and merged.warnings == [f"rank 1: {w}" for w in alone.warnings]
