"""studio profile memory: the device total, the blocks allocated or freed in an interval (grouped by
stream and component, filtered by size) and the op-by-op compare of two runs, each figure checked
against a plain sqlite / csv computation of the real 2-rank exports."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from studio.cli import main
from studio.core.serial import to_json
from studio.tools.profiler.memory import Interval, open_memory
from studio.tools.profiler.memory.compare import compare_reports

TWO_TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"
TWO_DB = "cluster_pytorch/msinsight_db_2rank_level2/level2"
MB = 1024 * 1024


def _db(real: Path, rank: int) -> Path:
    return real / TWO_DB / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / f"ascend_pytorch_profiler_{rank}.db"


def _text(real: Path, rank: int) -> Path:
    return real / TWO_TEXT / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"


def _db_blocks(path: Path) -> tuple[float, list[dict]]:
    """(first PTA+GE sample in µs, the OP_MEMORY rows with stream and component) straight from sqlite."""
    with sqlite3.connect(path) as db:
        first = db.execute("SELECT min(timestamp) FROM MEMORY_RECORD m JOIN STRING_IDS s ON s.id = m.component "
                           "WHERE s.value = 'PTA+GE' AND totalAllocated IS NOT NULL").fetchone()[0] / 1000
        ge = {r[0] for r in db.execute("SELECT DISTINCT s.value FROM NPU_OP_MEM n JOIN STRING_IDS s "
                                       "ON s.id = n.operatorName")}
        rows = db.execute("SELECT s.value, o.size, o.allocationTime, o.releaseTime, o.streamPtr FROM OP_MEMORY o "
                          "JOIN STRING_IDS s ON s.id = o.name").fetchall()
    return first, [{"name": n, "mb": size / MB, "alloc": a / 1000, "release": None if r is None else r / 1000,
                    "stream": "" if s is None else str(s), "component": "GE" if n in ge else "PTA"}
                   for n, size, a, r, s in rows]


def _text_blocks(output: Path) -> tuple[float, list[dict]]:
    with open(output / "memory_record.csv") as f:
        first = min(float(r["Timestamp(us)"]) for r in csv.DictReader(f) if r["Component"] == "PTA+GE")
    with open(output / "operator_memory.csv") as f:
        rows = list(csv.DictReader(f))
    return first, [{"name": r["Name"], "mb": float(r["Size(KB)"]) / 1024, "alloc": float(r["Allocation Time(us)"]),
                    "release": float(r["Release Time(us)"]) if r["Release Time(us)"].strip() else None,
                    "stream": r["Stream Ptr"], "component": "GE" if r["Name"].startswith("cann::") else "PTA"}
                   for r in rows]


def _plain_interval(blocks: list[dict], t0: float, t1: float, min_kb: float, key: str) -> dict:
    """Per ``key``: [allocations, MB allocated, frees, MB freed] of the blocks in [t0, t1]."""
    out = defaultdict(lambda: [0, 0.0, 0, 0.0])
    for b in blocks:
        if b["mb"] * 1024 < min_kb:
            continue
        if t0 <= b["alloc"] <= t1:
            out[b[key]][0] += 1
            out[b[key]][1] += b["mb"]
        if b["release"] is not None and t0 <= b["release"] <= t1:
            out[b[key]][2] += 1
            out[b[key]][3] += b["mb"]
    return {k: v for k, v in out.items() if v[0] or v[2]}


@pytest.fixture(scope="module")
def real(real_profiles) -> Path:
    return real_profiles


def test_the_device_total_is_npu_mem_device_rows_beside_process_and_framework(real):
    report = open_memory(real / TWO_DB)
    for device in report.devices:
        rank = int(device["device"].split(":")[1])
        with sqlite3.connect(_db(real, rank)) as db:
            (device_max,), (app_max,) = (db.execute(
                "SELECT max(hbm) FROM NPU_MEM n JOIN STRING_IDS s ON s.id = n.type WHERE s.value = ?", (kind,)
            ).fetchone() for kind in ("device", "app"))
        assert device["peak_device_mb"] == pytest.approx(device_max / MB)
        assert device["peak_app_reserved_mb"] == pytest.approx(app_max / MB)
    rank0 = next(d for d in report.devices if d["device"] == "NPU:0")
    assert round(rank0["peak_device_mb"]) == 2353
    text = str(report)
    assert "device 2,353.426 MB (NPU_MEM" in text and "process 2,113.734 MB" in text
    # the text export keeps no device total: said, not guessed
    text_report = open_memory(real / TWO_TEXT)
    assert all(d["peak_device_mb"] is None for d in text_report.devices)
    assert "the device total is in the db export's NPU_MEM table or the text export's npu_mem.csv only" \
        in str(text_report)


@pytest.mark.parametrize("group", ["stream", "component", "op"])
def test_db_interval_equals_sqlite(real, group):
    first, blocks = _db_blocks(_db(real, 0))
    report = open_memory(real / TWO_DB / "rank0_ascend_pt", interval=Interval(40.0, 50.0, 1024.0, group))
    interval = report.devices[0]["interval"]
    key = {"op": "name"}.get(group, group)
    plain = _plain_interval(blocks, first + 40_000, first + 50_000, 1024.0, key)
    assert plain, "the interval holds blocks"
    got = {g["key"]: [g["allocations"], g["allocated_mb"], g["frees"], g["freed_mb"]] for g in interval["groups"]}
    assert got.keys() == plain.keys()
    for k, v in plain.items():
        assert got[k] == pytest.approx(v)
    assert interval["allocations"] == sum(v[0] for v in plain.values())
    assert interval["net_mb"] == pytest.approx(sum(v[1] - v[3] for v in plain.values()))
    assert len(interval["ops"]) == sum(1 for b in blocks if b["mb"] * 1024 >= 1024 and (
        first + 40_000 <= b["alloc"] <= first + 50_000
        or (b["release"] is not None and first + 40_000 <= b["release"] <= first + 50_000)))
    assert [o["size_mb"] for o in interval["ops"]] == sorted((o["size_mb"] for o in interval["ops"]), reverse=True)
    if group == "component":
        assert set(got) == {"PTA", "GE"}


def test_text_interval_equals_csv_and_the_whole_profile_by_default(real):
    output = _text(real, 1)
    first, blocks = _text_blocks(output)
    report = open_memory(real / TWO_TEXT / "rank1_ascend_pt", interval=Interval(None, None, 0.0, "stream"))
    interval = report.devices[0]["interval"]
    assert "from the start (no --from), to the end (no --to)" in interval["bounds_note"]
    plain = _plain_interval(blocks, first, float("inf"), 0.0, "stream")
    got = {g["key"]: [g["allocations"], g["allocated_mb"], g["frees"], g["freed_mb"]] for g in interval["groups"]}
    assert got.keys() == plain.keys() and len(got) >= 2
    for k, v in plain.items():
        assert got[k] == pytest.approx(v)
    assert interval["allocations"] == len(blocks)  # every block is allocated within the profile
    for op in interval["ops"]:
        assert op["component"] == ("GE" if op["name"].startswith("cann::") else "PTA")


def test_compare_op_by_op_equals_plain_sums(real, tmp_path):
    """The text rank against a copy of itself with one op's blocks grown: the op's difference is the growth
    and it leads; every op's sizes, counts and durations equal plain sums of the two csv files."""
    base = _text(real, 0)
    new = tmp_path / "new" / "ASCEND_PROFILER_OUTPUT"
    shutil.copytree(base, new, ignore=shutil.ignore_patterns("trace_view.json", "kernel_details.csv"))
    with open(new / "operator_memory.csv", newline="") as f:
        rows = list(csv.reader(f))
    grown = 0.0
    for row in rows[1:]:
        if row[0] == "aten::mm":
            row[1] = str(float(row[1]) * 2)
            grown += float(row[1]) / 2 / 1024
    with open(new / "operator_memory.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    result = compare_reports(to_json(open_memory(base, blocks=True)), to_json(open_memory(new, blocks=True)),
                             "base", "new")
    (device,) = result.devices
    assert device["ops"][0]["op"] == "aten::mm"
    assert device["ops"][0]["diff_size_mb"] == pytest.approx(grown)
    plain = {}
    for side, output in (("base", base), ("new", new)):
        _, blocks = _text_blocks(output)
        for b in blocks:
            entry = plain.setdefault((side, b["name"].removeprefix("cann::")), [0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += b["mb"]
            entry[2] += 0.0 if b["release"] is None else (b["release"] - b["alloc"]) / 1000
    for row in device["ops"]:
        for side in ("base", "new"):
            count, size, duration = plain[(side, row["op"])]
            assert (row[f"{side}_blocks"], row[f"{side}_size_mb"], row[f"{side}_duration_ms"]) == pytest.approx(
                (count, size, duration))
        assert row["ratio"] == pytest.approx(row["new_size_mb"] / row["base_size_mb"]) if row["base_size_mb"] \
            else row["ratio"] in (None, 1.0)
    diffs = [r["diff_size_mb"] for r in device["ops"]]
    assert diffs == sorted(diffs, reverse=True)


def test_compare_pairs_a_db_and_a_text_cluster_device_by_device(real):
    result = compare_reports(to_json(open_memory(real / TWO_DB, blocks=True)),
                             to_json(open_memory(real / TWO_TEXT, blocks=True)), "db", "text")
    assert [(d["base_device"], d["new_device"]) for d in result.devices] == [
        ("rank0_ascend_pt NPU:0", "rank0_ascend_pt NPU:0"), ("rank1_ascend_pt NPU:1", "rank1_ascend_pt NPU:1")]
    _, db_blocks = _db_blocks(_db(real, 0))
    ge = {b["name"] for b in db_blocks if b["component"] == "GE"}
    rows = {r["op"]: r for r in result.devices[0]["ops"]}
    for name in ge:  # GE's ops pair across the text export's "cann::" prefix
        assert rows[name]["base_blocks"] and rows[name]["new_blocks"], name
        assert rows[name]["component"] == "GE"
    assert result.devices[0]["base_peak_device_mb"] == pytest.approx(open_memory(real / TWO_DB).devices[0]
                                                                      ["peak_device_mb"])
    assert result.devices[0]["new_peak_device_mb"] is None


def test_cli_interval_json_and_bad_bounds(real, capsys):
    assert main(["profile", "memory", str(real / TWO_DB), "--from", "40", "--to", "50", "--group", "component",
                 "--min-kb", "1024", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    first, blocks = _db_blocks(_db(real, 0))
    plain = _plain_interval(blocks, first + 40_000, first + 50_000, 1024.0, "component")
    groups = {g["key"]: g["allocated_mb"] for g in data["devices"][0]["interval"]["groups"]}
    assert groups == pytest.approx({k: v[1] for k, v in plain.items()})
    assert main(["profile", "memory", str(real / TWO_DB), "--from", "50", "--to", "40"]) != 0
    assert "--from 50 ms is after --to 40 ms" in capsys.readouterr().err
    assert main(["profile", "memory", str(real / TWO_DB), "--compare", str(real / TWO_TEXT), "--from", "1"]) != 0
    assert "--compare takes no interval" in capsys.readouterr().err
