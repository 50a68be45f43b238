"""The Cluster panel's "All ranks' timelines": the Profiler shows every rank of the real 2-rank
export on one timeline, a lane group per rank, each lane what the rank shows alone."""

from __future__ import annotations

from PySide6.QtCore import Qt

from studio.core.jobs import run_job
from studio.tools.profiler.loader import open_profile

TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"
OUT16 = "cluster_pytorch/cluster_analysis_output_16rank_msinsight"


def test_all_ranks_timelines_open_in_the_profiler_as_lane_groups(qtbot, make_window, real_profiles, tmp_path):
    window = make_window()
    window.open_paths([real_profiles / TEXT])
    cluster = window.panels["cluster"]
    qtbot.waitUntil(lambda: cluster.state.report is not None, timeout=30000)
    assert cluster.lanes_button.isEnabled()
    profiler = window.panels["profiler"]
    partial = []  # the lanes shown while the ranks decode (no cache yet: each rank's step summary first)
    profiler.rank_lanes_ready.connect(lambda loaded: partial.append(loaded.label))
    qtbot.mouseClick(cluster.lanes_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(profiler.state.profiles) == 1
                    and profiler.state.profiles[0].label.endswith("(all ranks)"), timeout=60000)
    assert partial[0].endswith("(all ranks: 0 of 2 decoded)")
    loaded = profiler.state.profiles[0]
    assert loaded.label.endswith("(all ranks)") and loaded.path == real_profiles / TEXT
    trace = loaded.trace
    for rank in (0, 1):
        alone = run_job(open_profile(real_profiles / TEXT / f"rank{rank}_ascend_pt", use_cache=False))
        lanes = [t for t in trace.tracks if t.process.startswith(f"rank {rank} · ")]
        assert sorted((t.process, t.name) for t in lanes) == sorted((f"rank {rank} · {t.process}", t.name)
                                                                     for t in alone.tracks)
    view = profiler.timeline
    headers = [row.label for row in view.rows if row.kind == "process"]
    assert headers.index("rank 0 · Python") < headers.index("rank 1 · Python")  # grouped by rank, in order
    qtbot.wait(50)
    view.grab().save(str(tmp_path / "rank_lanes.png"))
    # asked again: the profile already open comes to the front, nothing is read twice
    cluster.open_rank_timelines()
    qtbot.wait(50)
    assert len(profiler.state.profiles) == 1
    # msprof-analyze's output holds summaries only: no lanes to ask for
    window.open_paths([real_profiles / OUT16])
    qtbot.waitUntil(lambda: cluster.state.report is not None and cluster.state.folder == real_profiles / OUT16,
                    timeout=30000)
    qtbot.waitUntil(lambda: not cluster.lanes_button.isEnabled(), timeout=5000)
