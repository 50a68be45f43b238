"""The cause of a slow collective on text exports (trace_view.json, no profiler db): checked on the
real 2-rank text export against its raw trace read with the json module, and on a synthetic text
cluster whose slow host (rank 1) and slow device (rank 2) are known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.tools.profiler.cluster.comm_report import open_comm
from tests.tools import synthetic_cluster

TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"


def _raw_ops(trace: Path) -> dict[str, float]:
    """Op name -> duration in µs, straight from the HCCL process's Communication lanes."""
    events = json.loads(trace.read_text())
    hccl = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
            and e["args"]["name"] == "HCCL"}
    lanes = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
             and e["pid"] in hccl and e["args"]["name"].endswith("Communication")}
    return {e["name"]: float(e["dur"]) for e in events if e.get("ph") == "X" and (e["pid"], e["tid"]) in lanes}


@pytest.mark.parametrize("target", [0, 1])
def test_real_text_export_causes_equal_the_raw_trace(real_profiles, target):
    root = real_profiles / TEXT
    raw = {rank: _raw_ops(root / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json") for rank in (0, 1)}
    report = open_comm(root, target)
    assert report.sources_of_causes == {"0": "trace_view.json", "1": "trace_view.json"}
    assert not any("cannot be told" in w for w in report.warnings)
    mine = {b["op"]: b for b in report.bottlenecks}
    assert list(mine) == sorted(raw[target], key=lambda op: -raw[target][op])  # longest first
    for op, found in mine.items():
        durations = [raw[rank][op] for rank in (0, 1)]
        spread = (max(durations) - min(durations)) / max(durations)
        assert found["duration_ns"] / 1000 == pytest.approx(raw[target][op], abs=1e-3)
        # every all-reduce of this run lasts the same on both ranks within 5 %: no rank arrived late
        assert spread < 0.05 and found["verdict"] == "no slow rank"
        assert f"{spread:.1%}" in found["reason"]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cause")
    return {export: synthetic_cluster.build(root / export, export=export) for export in ("text", "db")}


def test_synthetic_text_export_names_the_slow_host_and_the_slow_device(synthetic):
    report = open_comm(synthetic["text"])
    assert report.sources_of_causes == {"0": "trace_view.json", "1": "trace_view.json", "2": "trace_view.json"}
    synthetic_cluster.check_causes(report.bottlenecks)


def test_text_and_db_exports_of_one_run_give_one_cause(synthetic):
    """The same program written both ways: the verdicts, ranks, gaps and evidence agree (the CANN
    call names differ only in how each export spells them: ``Node@launch`` / ``node@launch``)."""
    text, db = (open_comm(synthetic[k]).bottlenecks for k in ("text", "db"))
    assert [b["op"] for b in text] == [b["op"] for b in db]
    for a, b in zip(text, db):
        for key in ("verdict", "slow_rank", "fast_rank", "clock_shift_ns", "launches", "aligned", "duration_ns"):
            assert a[key] == b[key], key
        assert json.dumps(a["evidence"]).lower() == json.dumps(b["evidence"]).lower()
