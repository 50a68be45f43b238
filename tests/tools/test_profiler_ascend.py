"""Real msprof and PyTorch-NPU output, and the folder layouts of different CANN versions."""

from __future__ import annotations

import shutil

import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.profiler import csv_tables, stats
from studio.tools.profiler.loader import open_profile


def load(path):
    return run_job(open_profile(path, use_cache=False))


def test_pytorch_npu_folder(ascend_fixtures):
    trace = load(ascend_fixtures / "pytorch_npu")
    processes = {t.process for t in trace.tracks}
    assert {"Python", "CANN", "Ascend Hardware", "HCCL", "Overlap Analysis"} <= processes
    assert trace.size == 4384 and trace.flow_src.size > 500  # s/f pairs bound to slices
    assert {"op_summary", "op_statistic", "api_statistic", "step_trace"} <= set(trace.tables)
    # kernel_details.csv: PyTorch header aliases (Name, Type, Accelerator Core) and trailing tabs
    summary = trace.tables["op_summary"]
    assert "Op Name" in summary.columns and "Task Type" in summary.columns
    assert summary.column("Task Start Time(us)")[0] == "1736408883704643.212"
    assert any(c.name.startswith("AI Core Freq") for c in trace.counters)
    assert "Ascend Hardware" in trace.facts["NPU processes"] and "Python" in trace.facts["CPU processes"]
    assert trace.facts["trace start"].startswith("2025-01-09")
    assert trace.facts["step time (1 steps)"].startswith("computing 8.87 ms")
    assert trace.facts["device tasks by type"].startswith("AI_VECTOR_CORE 149")
    apis = stats.api_rows(trace)
    assert apis[0]["total_us"] >= apis[-1]["total_us"] and apis[0]["name"]


def test_legacy_op_summary_header_becomes_device_slices(ascend_fixtures):
    trace = load(ascend_fixtures / "msprof" / "op_summary_legacy_header.csv")
    table = trace.tables["op_summary"]
    assert "Block Num" in table.columns  # "Block Dim" in this CANN version
    assert trace.size == len(table.rows)
    flash = next(s for s in stats.by_name(trace) if s.name == "FlashAttentionScore")
    durations = [csv_tables.number(r[table.columns.index("Task Duration(us)")])
                 for r in table.rows if r[table.columns.index("Op Name")] == "FlashAttentionScore"]
    assert flash.count == len(durations)
    assert flash.total_us == pytest.approx(sum(durations), abs=1e-3)


def test_msprof_database(ascend_fixtures):
    trace = load(ascend_fixtures / "msprof" / "msprof_0.db")
    names = set(trace.names)
    assert "aclnnTril_Tril_Tril" in names  # TASK joined with COMPUTE_TASK_INFO through STRING_IDS
    assert trace.facts["device"] == "Ascend910B"
    assert any(t.process.startswith("Ascend Hardware") for t in trace.tracks)


def test_prof_folder_layouts_and_merged_slices(ascend_fixtures, tmp_path):
    tiny = (ascend_fixtures / "pytorch_npu" / "trace_view.json").read_text()
    new = tmp_path / "PROF_000001_20250101000000000_ABCDEF"
    out = new / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    # a sliced timeline: the two halves of one event array
    import json
    events = json.loads(tiny)
    half = len(events) // 2
    (out / "msprof_slice_0_20250101.json").write_text(json.dumps(events[:half]))
    (out / "msprof_slice_1_20250101.json").write_text(json.dumps(events[half:]))
    shutil.copy(ascend_fixtures / "pytorch_npu" / "op_statistic.csv", out / "op_statistic_20250101.csv")
    (new / "device_0").mkdir()
    (new / "device_0" / "info.json.0").write_text(json.dumps(
        {"hostname": "npu-box", "DeviceInfo": [{"id": 0, "ai_core_num": 24, "hwts_frequency": "50"}]}))
    trace = load(new)
    assert trace.size == 4384 and "op_statistic" in trace.tables
    assert trace.facts["device_0/hostname"] == "npu-box" and trace.facts["device_0/DeviceInfo.ai_core_num"] == "24"
    old = tmp_path / "PROF_000002_20230101000000000_ABCDEF"
    (old / "device_0" / "summary").mkdir(parents=True)
    shutil.copy(ascend_fixtures / "msprof" / "op_summary_legacy_header.csv",
                old / "device_0" / "summary" / "op_summary_0_1_1.csv")
    trace = load(old)
    assert trace.size == 21 and "op_summary" in trace.tables


def test_empty_prof_folder_says_what_to_do(tmp_path):
    folder = tmp_path / "PROF_000003_20230101000000000_X"
    folder.mkdir()
    with pytest.raises(UserError, match="No profiling data") as info:
        load(folder)
    assert "msprof --export=on" in str(info.value)


def test_garbled_csv_and_db(tmp_path):
    bad = tmp_path / "op_summary_1.csv"
    bad.write_text("Op Name,OP Type,Task Start Time(us),Task Duration(us)\nConv,Conv,notanumber,\x00\x01\n")
    trace = load(bad)
    assert trace.size == 0 and len(trace.tables["op_summary"].rows) == 1
    huge = tmp_path / "op_statistic_1.csv"
    huge.write_text('OP Type,Core Type,Count,Total Time(us)\n"' + "x" * 200_000 + '",AI_CORE,1,2\n')
    with pytest.raises(UserError, match="malformed"):
        load(huge)
    db = tmp_path / "msprof_1.db"
    db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    with pytest.raises(UserError):
        load(db)
