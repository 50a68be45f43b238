"""Every rank's timeline shown while the ranks decode: on the real 2-rank export, a first joined
trace (each rank's step summary) comes before any rank is decoded, each decoded rank's lanes then
hold exactly what the rank shows alone, and the last joined trace equals the one-shot open."""

from __future__ import annotations

import csv

import numpy as np

from studio.core.jobs import run_job
from studio.tools.profiler.cluster import progressive
from studio.tools.profiler.cluster.progressive import SUMMARY_PROCESS, open_rank_timelines_progressive
from studio.tools.profiler.cluster.timeline import open_rank_timelines
from studio.tools.profiler.loader import open_profile

from test_profiler_rank_timelines import TEXT, lane_slices


def test_summary_lanes_first_then_each_rank_as_it_is_decoded(real_profiles, monkeypatch):
    folder = real_profiles / TEXT
    events: list[tuple] = []
    decode = progressive.decode_rank

    def slow_decode(path, cancel):  # records when each rank's decoding starts and ends
        events.append(("decoding", path.name))
        trace = yield from decode(path, cancel)
        events.append(("decoded", path.name))
        return trace

    shown = []

    def show(trace, done, total):
        events.append(("shown", done))
        shown.append(trace)

    monkeypatch.setattr(progressive, "decode_rank", slow_decode)
    final = run_job(open_rank_timelines_progressive(folder, show, workers=1))
    assert events == [("shown", 0), ("decoding", "rank0_ascend_pt"), ("decoded", "rank0_ascend_pt"), ("shown", 1),
                      ("decoding", "rank1_ascend_pt"), ("decoded", "rank1_ascend_pt")]
    first, second = shown
    # the first frame: each rank's step summary, its blocks the rank's own step_trace_time.csv
    assert {t.process for t in first.tracks} == {f"rank {r} · {SUMMARY_PROCESS}" for r in (0, 1)}
    for rank in (0, 1):
        with open(folder / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv") as handle:
            row = next(csv.DictReader(handle))
        blocks = {name: dur for name, _start, dur in lane_slices(first, f"rank {rank} · ")}
        assert blocks["Computing"] == round(float(row["Computing"]) * 1000)
        assert blocks["Free"] == round(float(row["Free"]) * 1000)
        assert blocks[f"step {row['Step']}"] == sum(blocks[k] for k in ("Computing", "Free",
                                                                         "Communication (not overlapped)"))
    assert first.warnings and "2 of 2 ranks still decoding" in first.warnings[0]
    # then rank 0 in full, rank 1 still its summary
    alone0 = run_job(open_profile(folder / "rank0_ascend_pt", use_cache=False))
    assert lane_slices(second, "rank 0 · ") == lane_slices(alone0, "")
    assert {t.process for t in second.tracks if t.process.startswith("rank 1 · ")} == {f"rank 1 · {SUMMARY_PROCESS}"}
    # the last joined trace is the one-shot open's
    one_shot = run_job(open_rank_timelines(folder, workers=1))
    _same_trace(final, one_shot)
    assert not final.warnings and final.facts["ranks"] == "2"


def test_offloaded_decoding_maps_each_rank_and_ends_as_the_one_shot_open(real_profiles, studio_home):
    folder = real_profiles / TEXT
    shown = []
    final = run_job(open_rank_timelines_progressive(folder, lambda t, d, n: shown.append(d), offload=True))
    assert shown and shown[0] == 0
    _same_trace(final, run_job(open_rank_timelines(folder, workers=1)))
    again = []  # every rank cached now: nothing to show before the whole trace
    _same_trace(run_job(open_rank_timelines_progressive(folder, lambda t, d, n: again.append(d), offload=True)),
                final)
    assert again == []


def _same_trace(a, b) -> None:
    assert a.size == b.size and a.names == b.names and a.origin_ns == b.origin_ns
    for column in ("start", "dur", "track", "depth", "name", "cat", "args_len"):
        assert np.array_equal(getattr(a, column), getattr(b, column)), column
    assert [(t.process, t.name) for t in a.tracks] == [(t.process, t.name) for t in b.tracks]
    assert a.slice_args(a.size // 2) == b.slice_args(b.size // 2)
    assert len(a.lod.levels) == len(b.lod.levels)
    assert all(np.array_equal(x.rep, y.rep) for x, y in zip(a.lod.levels, b.lod.levels))
