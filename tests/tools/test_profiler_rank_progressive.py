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


def test_msprof_devices_show_their_iterations_at_their_times_first(real_profiles, studio_home):
    """A PROF_* device has no step_trace_time.csv; its step_trace_*.json places each iteration (and
    its FP/BP and refresh parts) on the device's clock, so its summary lanes sit where its decoded
    lanes will."""
    import json

    folder = real_profiles / "msprof_prof_legacy" / "mindinsight_2dev"
    shown = []
    final = run_job(open_rank_timelines_progressive(folder, lambda trace, done, total: shown.append(trace),
                                                    workers=1))
    first = shown[0]
    for rank, device in ((0, "device_0"), (1, "device_1")):
        [step_trace] = folder.glob(f"PROF_*/{device}/timeline/step_trace_*.json")
        expected = sorted((e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000))
                          for e in json.loads(step_trace.read_text())
                          if e.get("ph") == "X" and e.get("cat") in ("Iteration Time", "FP_BP Time", "Iteration Refresh"))
        assert len(expected) >= 6
        summary = [t.id for t in first.tracks if t.process == f"rank {rank} · {SUMMARY_PROCESS}"]
        assert summary and "at their times" in first.tracks[summary[0]].name
        blocks = sorted((first.names[int(first.name[i])], int(first.start[i]) + first.origin_ns, int(first.dur[i]))
                        for i in np.flatnonzero(np.isin(first.track, summary)))
        assert blocks == expected
        # the iterations the decoded rank holds (its msprof_*_1.json exports iteration 1) are at
        # the same wall-clock times, to the ns
        decoded = {(final.names[int(final.name[i])], int(final.start[i]) + final.origin_ns, int(final.dur[i]))
                   for i in range(final.size) if final.tracks[int(final.track[i])].process.startswith(f"rank {rank} · ")
                   and final.names[int(final.name[i])].startswith("Iteration ")}
        assert decoded and decoded <= set(expected)
    assert "ranks still decoding" in first.warnings[0]


def test_a_cut_msprof_step_summary_is_named_and_the_rank_still_decodes(real_profiles, studio_home, tmp_path):
    import shutil

    folder = tmp_path / "two"
    shutil.copytree(real_profiles / "msprof_prof_legacy" / "mindinsight_2dev", folder)
    [step_trace] = folder.glob("PROF_*/device_0/timeline/step_trace_*.json")
    step_trace.chmod(0o644)
    step_trace.write_bytes(step_trace.read_bytes()[:3000])  # cut mid-event
    shown = []
    final = run_job(open_rank_timelines_progressive(folder, lambda trace, done, total: shown.append(trace),
                                                    workers=1))
    first = shown[0]
    assert {t.process for t in first.tracks} == {f"rank 1 · {SUMMARY_PROCESS}"}
    assert any(w.startswith("rank 0: its step summary could not be read") and step_trace.name in w
               for w in first.warnings)
    assert {t.process.split(" · ")[0] for t in final.tracks} == {"rank 0", "rank 1"} and not final.warnings
