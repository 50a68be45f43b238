"""The rank lanes fill in while the ranks decode: each fuller joined trace is swapped in with the
timeline kept where the user has it (time window, selected range, selected slice), on the real
2-rank export."""

from __future__ import annotations

import numpy as np

from studio.core.jobs import run_job
from studio.tools.profiler.cluster.progressive import SUMMARY_PROCESS, open_rank_timelines_progressive
from studio.ui.panels.profiler.loading import partial_loaded

TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"


def test_a_decoded_rank_is_swapped_in_with_the_view_kept(qtbot, make_window, real_profiles):
    folder = real_profiles / TEXT
    partials = []
    final = run_job(open_rank_timelines_progressive(
        folder, lambda trace, done, total: partials.append(partial_loaded(folder, trace, done, total)), workers=1))
    summary, one_rank = partials  # both ranks as their step summary, then rank 0 decoded
    window = make_window()
    profiler = window.panels["profiler"]
    view = profiler.timeline
    profiler.rank_lanes_ready.emit(summary)
    qtbot.waitUntil(lambda: len(profiler.state.profiles) == 1, timeout=5000)
    assert profiler.state.current is summary and view.trace is summary.trace
    assert profiler.profile_box.currentText().endswith("(all ranks: 0 of 2 decoded)")
    assert {r.label for r in view.rows if r.kind == "process"} == {f"rank {r} · {SUMMARY_PROCESS}" for r in (0, 1)}
    # the user zooms into the summary, then rank 0 comes in: the same wall-clock window
    origin = summary.trace.origin_ns
    view.set_window(1_000_000, 9_000_000)
    profiler.rank_lanes_ready.emit(one_rank)
    qtbot.waitUntil(lambda: view.trace is one_rank.trace, timeout=5000)
    shift = one_rank.trace.origin_ns - origin
    assert one_rank.trace.origin_ns != origin  # the joined clock moved with the decoded rank
    assert (view.t0, view.t1) == (1_000_000 - shift, 9_000_000 - shift)
    assert len(profiler.state.profiles) == 1 and profiler.profile_box.count() == 1
    # the user selects a slice of rank 0 and a range, then the last rank comes in
    trace = one_rank.trace
    pick = next(i for i in range(trace.size) if trace.tracks[int(trace.track[i])].process == "rank 0 · Python"
                and trace.dur[i] > 0)
    view.select_slice(pick)
    view.range = (2_000_000, 3_000_000)
    pinned = [t.id for t in trace.tracks if t.process.startswith("rank 0 ")][:2]
    view.set_pinned(pinned)
    pinned_names = [(trace.tracks[t].process, trace.tracks[t].name) for t in pinned]
    view.add_marker(2_500_000)
    marker_wall = 2_500_000 + trace.origin_ns
    needle = trace.names[int(trace.name[pick])]
    profiler.find.setText(needle)
    qtbot.waitUntil(lambda: profiler.match_label.text().endswith("found"), timeout=10000)
    window_before = (view.t0, view.t1)
    key = (trace.names[int(trace.name[pick])], int(trace.start[pick]) + trace.origin_ns, int(trace.dur[pick]))
    done = profiler.state.profiles[0]
    final_loaded = partial_loaded(folder, final, 2, 2)
    final_loaded.label = "level2 (all ranks)"
    profiler._on_rank_lanes(final_loaded)
    assert view.trace is final and profiler.state.profiles == [final_loaded] and done is not final_loaded
    shift = final.origin_ns - trace.origin_ns
    assert (view.t0, view.t1) == (window_before[0] - shift, window_before[1] - shift)
    assert view.range == (2_000_000 - shift, 3_000_000 - shift)
    now = view.selected
    assert now >= 0
    assert (final.names[int(final.name[now])], int(final.start[now]) + final.origin_ns, int(final.dur[now])) == key
    assert profiler.profile_box.currentText() == "level2 (all ranks)"
    # pinned lanes, markers and the find's matches belong to the new trace now
    assert [(final.tracks[t].process, final.tracks[t].name) for t in view.pinned] == pinned_names
    assert view.rows[0].pinned and view.pinned_h > 0
    assert [m + final.origin_ns for m in view.markers] == [marker_wall]
    qtbot.waitUntil(lambda: view.highlighted.size > 0 and int(view.highlighted.max()) < final.size, timeout=10000)
    names = np.asarray(final.names, dtype=object)[np.asarray(final.name)[view.highlighted]]
    assert all(needle.lower() in str(n).lower() for n in names)
    assert profiler.match_label.text() == f"{view.highlighted.size:,} found"


def test_the_rank_job_waits_until_the_swapped_lanes_are_painted(qtbot, make_panel, real_profiles):
    """Joining the next ranks while the window paints the last ones would take half the
    interpreter's turns from that frame: the job waits for the paint (never longer than a second),
    and not at all while the timeline is off screen."""
    import threading

    from studio.ui.panels.profiler.panel import ProfilerPanel

    folder = real_profiles / TEXT
    partials = []
    run_job(open_rank_timelines_progressive(
        folder, lambda trace, done, total: partials.append(partial_loaded(folder, trace, done, total)), workers=1))
    profiler = make_panel(ProfilerPanel)
    view = profiler.timeline
    profiler.rank_lanes_ready.emit(partials[0])
    qtbot.waitUntil(lambda: view.trace is partials[0].trace and view.last_frame_ms > 0, timeout=5000)
    swapped = profiler.reader.swapped[folder] = threading.Event()
    painted = []
    view.after_next_paint(lambda: painted.append(swapped.is_set()))
    profiler._on_rank_lanes(partials[1])
    assert view.trace is partials[1].trace and not swapped.is_set()  # swapped, not painted yet
    qtbot.waitUntil(swapped.is_set, timeout=5000)
    assert painted == [False]  # set by that very paint, after it
    profiler.hide()
    off_screen = profiler.reader.swapped[folder] = threading.Event()
    profiler._on_rank_lanes(partials[0])
    assert off_screen.is_set()  # no paint will come: nothing to wait for


def test_lanes_left_part_way_are_read_again_when_asked_again(qtbot, make_window, real_profiles):
    folder = real_profiles / TEXT
    partials = []
    run_job(open_rank_timelines_progressive(
        folder, lambda trace, done, total: partials.append(partial_loaded(folder, trace, done, total)), workers=1))
    window = make_window()
    profiler = window.panels["profiler"]
    profiler.rank_lanes_ready.emit(partials[0])  # as a job cancelled after the step summaries left it
    qtbot.waitUntil(lambda: len(profiler.state.profiles) == 1, timeout=5000)
    profiler.open_rank_timelines(folder)
    qtbot.waitUntil(lambda: profiler.state.profiles[0].label.endswith("(all ranks)"), timeout=60000)
    assert len(profiler.state.profiles) == 1 and profiler.state.profiles[0].complete
    assert not any(t.process.endswith(SUMMARY_PROCESS) for t in profiler.timeline.trace.tracks)
    profiler.open_rank_timelines(folder)  # whole now: nothing is read again
    assert profiler.reader.rank_jobs == {}


def test_a_view_the_user_never_moved_opens_where_the_whole_trace_opens(qtbot, make_window, real_profiles):
    """The summary's fitted span starts at the collection start, before any decoded slice: kept as it
    was, the final frame showed an empty stretch at negative times while the info line said
    "showing iteration 1"."""
    from studio.tools.profiler.cluster.timeline import open_rank_timelines
    from studio.ui.panels.profiler.loading import loaded_with_stats

    folder = real_profiles / TEXT
    partials = []
    run_job(open_rank_timelines_progressive(
        folder, lambda trace, done, total: partials.append(partial_loaded(folder, trace, done, total)), workers=1))
    whole = run_job(loaded_with_stats(folder, run_job(open_rank_timelines(folder, workers=1))))
    assert whole.first_view is not None  # the export marks its profiler steps
    window = make_window()
    profiler = window.panels["profiler"]
    view = profiler.timeline
    profiler.rank_lanes_ready.emit(partials[0])
    qtbot.waitUntil(lambda: view.trace is partials[0].trace, timeout=5000)
    profiler._on_rank_lanes(whole)
    assert view.trace is whole.trace
    t0, t1 = whole.first_view
    assert view.t0 <= t0 and view.t1 >= t1 and view.t1 - view.t0 <= (t1 - t0) * 1.1  # its first iteration
    start = np.asarray(whole.trace.start)
    assert ((start >= view.t0) & (start <= view.t1)).any()  # slices on screen, not an empty stretch
