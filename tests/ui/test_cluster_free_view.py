"""The Idle gaps tab on many gaps: the job sends only the longest gaps of each rank and cause, and
every view (a rank, a cause, both, all) still lists exactly the longest of its gaps, as listing the
whole report would, with a line saying how many there are in all (real 2-rank text export)."""

from __future__ import annotations

import pytest

from studio.core.jobs import run_job
from studio.core.serial import to_json
from studio.tools.profiler.cluster import free_gaps
from studio.ui.panels.cluster.widgets.free_tab import ALL, gap_rows
from tests.ui.cluster_helpers import open_and_wait, panel  # noqa: F401 - the fixture

TEXT2 = "cluster_pytorch/msinsight_text_2rank_level2/level2"


def _longest(gaps: list[dict], rank, label, count: int) -> list[tuple]:
    """The view's ``count`` longest gaps from the whole report, sorted here (the reference)."""
    chosen = [g for g in gaps if rank in (ALL, g["rank"]) and label in (ALL, g["label"])]
    return [(g["rank"], g["start_ns"]) for g in sorted(chosen, key=lambda g: -g["duration_us"])[:count]]


def test_every_view_lists_its_longest_gaps_from_the_trimmed_report(real_profiles, monkeypatch):
    monkeypatch.setattr(free_gaps, "SHOWN", 4)
    whole = to_json(free_gaps.open_free(real_profiles / TEXT2))
    sent = run_job(free_gaps.free_view_json(str(real_profiles / TEXT2)))
    assert sent["shown"] == 4 and len(whole["gaps"]) == 180
    labels = {g["label"] for g in whole["gaps"]}
    assert len(sent["gaps"]) <= 4 * 2 * len(labels) < 180
    for rank in (ALL, 0, 1):
        for label in (ALL, *labels):
            listed = [(r[1], r[-1]["start_ns"]) for r in gap_rows(sent, rank, label)]
            assert listed == _longest(whole["gaps"], rank, label, 4), (rank, label)


def test_the_tab_says_when_only_the_longest_are_listed(qtbot, panel, real_profiles, monkeypatch):
    from studio.tools.profiler import loader

    monkeypatch.setattr(free_gaps, "SHOWN", 10)
    monkeypatch.setattr(loader, "OFFLOAD_BYTES", 1 << 40)  # read here, where SHOWN is patched
    open_and_wait(qtbot, panel, real_profiles / TEXT2, panel.free)
    tab = panel.free
    assert len(tab.gaps.model().rows) == 10
    assert tab.listed.text() == ("The 10 longest of 180 gaps are listed; studio profile cluster DIR --free --json "
                                 "lists every one.")
    tab.rank.setCurrentIndex(tab.rank.findData(1))
    tab.cause.setCurrentIndex(tab.cause.findData("memcpy running"))
    rows = tab.gaps.model().rows
    memcpy = sum(t["gaps"] for t in tab.report["totals"] if t["rank"] == 1 and t["label"] == "memcpy running")
    assert 0 < len(rows) == min(10, memcpy) and all(r[0] == "memcpy running" and r[1] == 1 for r in rows)
    assert tab.listed.isHidden() == (memcpy <= 10)
    durations = [r[3] for r in rows]
    assert durations == sorted(durations, reverse=True) == pytest.approx(durations)
