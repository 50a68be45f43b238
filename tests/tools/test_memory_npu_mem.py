"""The device total of a text export, from its npu_mem.csv: checked against the CSV read with the csv
module, and against the db export of the same figures (NPU_MEM).

No real text export in the fixtures kept its npu_mem.csv, so the file is written here from the real
2-rank db export's own NPU_MEM rows (bytes -> KB, ns -> µs), in the layout msprof writes it
(``Device_id,event,ddr(KB),hbm(KB),memory(KB),timestamp(us)``), beside the real text export's
memory CSVs."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path

import pytest

from studio.core.errors import UserError
from studio.tools.profiler.memory import open_memory

TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2/rank0_ascend_pt"
DB = "cluster_pytorch/msinsight_db_2rank_level2/level2/rank0_ascend_pt"
HEADER = ["Device_id", "event", "ddr(KB)", "hbm(KB)", "memory(KB)", "timestamp(us)"]


def _npu_mem_rows(real: Path) -> list[list]:
    """The db export's NPU_MEM rows as msprof writes them in npu_mem.csv."""
    with sqlite3.connect(real / DB / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db") as db:
        rows = db.execute("SELECT n.deviceId, s.value, n.ddr, n.hbm, n.timestampNs FROM NPU_MEM n "
                          "JOIN STRING_IDS s ON s.id = n.type ORDER BY n.timestampNs").fetchall()
    return [[device, event, ddr / 1024, hbm / 1024, (ddr + hbm) / 1024, f"{ts // 1000}.{ts % 1000:03d}\t"]
            for device, event, ddr, hbm, ts in rows]


def _text_rank(real: Path, root: Path) -> Path:
    rank = root / "rank0_ascend_pt"
    shutil.copytree(real / TEXT, rank, ignore=shutil.ignore_patterns("trace_view.json", "kernel_details.csv"))
    return rank


def _write(path: Path, header: list[str], rows: list[list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _by_hand(path: Path) -> tuple[float, int]:
    """(the highest hbm of the device rows in MB, how many device rows) — the csv module alone."""
    with open(path, newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["event"] == "device"]
    return max(float(r["hbm(KB)"]) for r in rows) / 1024, len(rows)


def test_text_export_device_total_from_npu_mem_csv(real_profiles, tmp_path):
    rank = _text_rank(real_profiles, tmp_path)
    before = open_memory(rank).devices[0]
    assert before["peak_device_mb"] is None
    csv_path = rank / "ASCEND_PROFILER_OUTPUT" / "npu_mem.csv"
    _write(csv_path, HEADER, _npu_mem_rows(real_profiles))
    report = open_memory(rank, series_points=200)
    device = report.devices[0]
    peak, count = _by_hand(csv_path)
    assert device["device"] == "NPU:0" and device["peak_device_mb"] == pytest.approx(peak, rel=1e-12)
    # the same figure the db export of these rows gives (2,353.4 MB on rank 0)
    db = next(d for d in open_memory(real_profiles / DB).devices if d["device"] == "NPU:0")
    assert device["peak_device_mb"] == pytest.approx(db["peak_device_mb"], rel=1e-12)
    assert round(device["peak_device_mb"]) == 2353
    # the process's figure stays the text export's own APP rows (memory_record.csv), not npu_mem's
    assert device["peak_app_reserved_mb"] == before["peak_app_reserved_mb"]
    assert str(csv_path) in device["files"]
    curve = device["series"]["device_mb"]  # the Memory tab's device curve, thinned with its peak kept
    assert 0 < len(curve) <= count and max(curve) == device["peak_device_mb"]
    assert f"device {peak:,.3f} MB (NPU_MEM" in str(report)


def test_msprof_npu_mem_beside_the_output_without_device_id(real_profiles, tmp_path):
    """msprof's own npu_mem_*.csv in the PROF_ folder torch_npu leaves beside ASCEND_PROFILER_OUTPUT
    (older CANN: no Device_id column) goes to the folder's one device."""
    rank = _text_rank(real_profiles, tmp_path)
    path = rank / "PROF_000001_20250109_abc" / "mindstudio_profiler_output" / "npu_mem_20250109.csv"
    _write(path, HEADER[1:], [row[1:] for row in _npu_mem_rows(real_profiles)])
    device = open_memory(rank).devices[0]
    assert device["peak_device_mb"] == pytest.approx(_by_hand(path)[0], rel=1e-12)


def test_npu_mem_without_device_id_in_a_folder_of_two_devices_is_refused(real_profiles, tmp_path):
    rank = _text_rank(real_profiles, tmp_path)
    record = rank / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    lines = record.read_text().splitlines()
    record.write_text("\n".join(lines + [lines[-1].replace("NPU:0", "NPU:1")]) + "\n")
    _write(rank / "ASCEND_PROFILER_OUTPUT" / "npu_mem.csv", HEADER[1:],
           [row[1:] for row in _npu_mem_rows(real_profiles)][:3])
    with pytest.raises(UserError) as caught:
        open_memory(rank)
    assert "no Device_id column" in caught.value.what and "npu_mem.csv" in str(caught.value.where)
