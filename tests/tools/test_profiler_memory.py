"""studio profile memory on the real text, db and static-graph memory files, checked against a
plain csv / sqlite computation of the same peak."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path

import pytest

from studio.core.errors import UserError
from studio.tools.profiler.memory import open_memory

TWO_TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"
TWO_DB = "cluster_pytorch/msinsight_db_2rank_level2/level2"


@pytest.fixture(scope="module")
def real(real_profiles) -> Path:
    return real_profiles


def _plain_text_peak(output: Path) -> tuple[float, float, float, list[tuple[str, float]]]:
    with open(output / "memory_record.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["Component"] == "PTA+GE"]
    peak = max(rows, key=lambda r: float(r["Total Allocated(MB)"]))
    ts = float(peak["Timestamp(us)"].strip())
    reserved = max(float(r["Total Reserved(MB)"]) for r in rows)
    with open(output / "operator_memory.csv") as f:
        alive = [(r["Name"], float(r["Size(KB)"]) / 1024) for r in csv.DictReader(f)
                 if float(r["Allocation Time(us)"].strip()) <= ts
                 and (not r["Release Time(us)"].strip() or float(r["Release Time(us)"].strip()) > ts)
                 and float(r["Size(KB)"]) > 0]
    return float(peak["Total Allocated(MB)"]), reserved, ts, sorted(alive, key=lambda a: -a[1])


def test_text_peak_equal_to_plain_csv(real):
    report = open_memory(real / TWO_TEXT)
    assert report.source["kind"] == "text"
    devices = {d["rank_folder"]: d for d in report.devices}
    assert sorted(devices) == ["rank0_ascend_pt", "rank1_ascend_pt"]
    for folder, device in devices.items():
        allocated, reserved, ts, alive = _plain_text_peak(real / TWO_TEXT / folder / "ASCEND_PROFILER_OUTPUT")
        assert device["component"] == "PTA+GE"
        assert device["peak_allocated_mb"] == pytest.approx(allocated)
        assert device["peak_reserved_mb"] == pytest.approx(reserved)
        assert device["peak_ts_us"] == pytest.approx(ts)
        assert [op["size_mb"] for op in device["top_ops_at_peak"]] == pytest.approx([a[1] for a in alive[:10]])
        assert device["alive_mb_at_peak"] == pytest.approx(sum(a[1] for a in alive))
    assert devices["rank1_ascend_pt"]["device"] == "NPU:1"
    assert devices["rank0_ascend_pt"]["top_ops_at_peak"][0]["size_mb"] == pytest.approx(144.0, abs=0.01)


def test_the_text_report_gives_the_peak_time_as_the_window_does(real):
    """The peak in milliseconds after the first allocator sample (the Memory tab's axis), not the raw clock."""
    report = open_memory(real / TWO_TEXT)
    for line, device in zip((l for l in str(report).splitlines() if "peak allocated" in l), report.devices):
        with open(real / TWO_TEXT / device["rank_folder"] / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv") as f:
            first = min(float(r["Timestamp(us)"]) for r in csv.DictReader(f) if r["Component"] == "PTA+GE")
        assert f"at {(device['peak_ts_us'] - first) / 1000:,.3f} ms after the first sample" in line
    assert "at 47.781 ms" in str(report)  # rank 0, as the Memory tab marks it


def test_db_peak_equal_to_plain_sqlite(real):
    report = open_memory(real / TWO_DB)
    assert report.source["kind"] == "db"
    for device in report.devices:
        rank = device["rank_folder"][4]
        path = real / TWO_DB / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{rank}.db"
        with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as db:
            comp = db.execute("SELECT id FROM STRING_IDS WHERE value='PTA+GE'").fetchone()[0]
            allocated, ts = db.execute("SELECT totalAllocated, timestamp FROM MEMORY_RECORD WHERE component=? "
                                       "ORDER BY totalAllocated DESC, timestamp LIMIT 1", (comp,)).fetchone()
            reserved = db.execute("SELECT max(totalReserved) FROM MEMORY_RECORD WHERE component=?",
                                  (comp,)).fetchone()[0]
            alive = db.execute("SELECT size FROM OP_MEMORY WHERE allocationTime <= ? AND (releaseTime IS NULL OR "
                               "releaseTime > ?) AND size > 0 ORDER BY size DESC", (ts, ts)).fetchall()
            app = db.execute("SELECT max(hbm) FROM NPU_MEM WHERE type=(SELECT id FROM STRING_IDS WHERE "
                             "value='app')").fetchone()[0]
        assert device["peak_allocated_mb"] == pytest.approx(allocated / 2**20)
        assert device["peak_reserved_mb"] == pytest.approx(reserved / 2**20)
        assert device["peak_ts_us"] == pytest.approx(ts / 1000)
        assert [op["size_mb"] for op in device["top_ops_at_peak"]] == pytest.approx([a[0] / 2**20 for a in alive[:10]])
        assert device["peak_app_reserved_mb"] == pytest.approx(app / 2**20)


def test_db_and_text_agree_on_the_same_model(real):
    # two separate runs of the same job: same peak, same biggest blocks
    text = {d["device"]: d for d in open_memory(real / TWO_TEXT).devices}
    db = {d["device"]: d for d in open_memory(real / TWO_DB).devices}
    for device in ("NPU:0", "NPU:1"):
        assert text[device]["peak_allocated_mb"] == pytest.approx(db[device]["peak_allocated_mb"])
        assert [o["size_mb"] for o in text[device]["top_ops_at_peak"][:4]] == \
            pytest.approx([o["size_mb"] for o in db[device]["top_ops_at_peak"][:4]])


def test_static_graph_peak_equal_to_plain_sweep(real):
    path = real / "memory/msinsight_static_op_mem/ASCEND_PROFILER_OUTPUT/static_op_mem.csv"
    report = open_memory(path)
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for graph in ("0", "1"):
        blocks = [(int(r["Node Index Start"]), int(r["Node Index End"]), float(r["Size(KB)"]) / 1024)
                  for r in rows if r["Graph ID"] == graph and r["Op Name"] != "TOTAL"]
        best = max(sum(size for s, e, size in blocks if s <= i <= e) for i in range(0, 40))
        total = next(float(r["Size(KB)"]) / 1024 for r in rows if r["Graph ID"] == graph and r["Op Name"] == "TOTAL")
        device = next(d for d in report.devices if d["graph"] == graph)
        assert device["peak_allocated_mb"] == pytest.approx(best)
        assert device["peak_reserved_mb"] == pytest.approx(total)
        live = [b for b in blocks if b[0] <= device["peak_node_index"] <= b[1]]
        assert sum(op["size_mb"] for op in device["top_ops_at_peak"]) == pytest.approx(
            sum(sorted((b[2] for b in live), reverse=True)[:10]))


def test_module_memory_only(real):
    report = open_memory(real / "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2")
    rank0 = next(d for d in report.devices if d["rank_folder"] == "rank_0_ascend_pt")
    assert rank0["peak_allocated_mb"] is None
    with open(real / "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2/rank_0_ascend_pt/"
                     "ASCEND_PROFILER_OUTPUT/npu_module_mem.csv") as f:
        hccl = max(float(r["Total Reserved(MB)"]) for r in csv.DictReader(f) if r["Component"] == "HCCL")
    assert next(m for m in rank0["modules"] if m["component"] == "HCCL")["peak_reserved_mb"] == pytest.approx(hccl)


def test_truncated_operator_memory_names_file_and_line(real, tmp_path):
    folder = tmp_path / "r"
    shutil.copytree(real / TWO_TEXT / "rank0_ascend_pt", folder)
    path = folder / "ASCEND_PROFILER_OUTPUT/operator_memory.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:40]) + lines[40][:30])
    with pytest.raises(UserError) as err:
        open_memory(folder)
    assert "truncated" in err.value.what and "operator_memory.csv, line 41" in err.value.where


def test_db_without_memory_tables(real, tmp_path):
    folder = tmp_path / "r"
    shutil.copytree(real / TWO_DB / "rank0_ascend_pt", folder)
    with sqlite3.connect(folder / "ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db") as db:
        db.execute("DROP TABLE MEMORY_RECORD")
    with pytest.raises(UserError) as err:
        open_memory(folder)
    assert "no MEMORY_RECORD table" in err.value.what and "ascend_pytorch_profiler_0.db" in err.value.where


def test_no_memory_files(tmp_path):
    (tmp_path / "ASCEND_PROFILER_OUTPUT").mkdir()
    with pytest.raises(UserError, match="No memory data"):
        open_memory(tmp_path)


def test_series_keeps_the_peak_and_the_envelope(real):
    import numpy as np

    from studio.tools.profiler.memory.series import downsample

    report = open_memory(real / TWO_TEXT, series_points=100)
    for device in report.devices:
        series = device["series"]
        assert series["samples"] == 495 and len(series["ts_us"]) <= 110  # ~2 points per bucket and series
        assert max(series["allocated_mb"]) == device["peak_allocated_mb"]
        assert device["peak_ts_us"] in series["ts_us"]
        assert series["ts_us"] == sorted(series["ts_us"])
    assert "series" not in open_memory(real / TWO_TEXT).devices[0]  # the CLI's JSON is unchanged
    rng = np.random.default_rng(3)
    values = rng.normal(1000, 50, 1_000_000)
    values[777_777] = 5000.0
    reserved = np.where(rng.random(values.size) < 0.01, np.nan, values + 100)
    keep = downsample([values, reserved], 4000)
    assert len(keep) <= 4002 and 777_777 in keep and 0 in keep and values.size - 1 in keep
    assert values[keep].min() == values.min() and np.nanmax(reserved[keep]) == np.nanmax(reserved)
