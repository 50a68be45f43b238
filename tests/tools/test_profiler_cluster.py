"""studio profile cluster on the real multi-rank fixtures, checked against plain csv/json/sqlite
reads of the same files and against msprof-analyze's own cluster output."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from studio.core.errors import UserError
from studio.tools.profiler.cluster import open_cluster
from studio.tools.profiler.cluster.groups import group_hash

REPO = Path(__file__).resolve().parents[2]
KEYS = {"computing_us": "Computing", "communication_not_overlapped_us": "Communication(Not Overlapped)",
        "overlapped_us": "Overlapped", "free_us": "Free", "bubble_us": "Bubble"}


@pytest.fixture(scope="module")
def real(real_profiles) -> Path:
    return real_profiles


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?immutable=1", uri=True)


def _by_rank(report) -> dict[int, dict]:
    return {r["rank"]: r for r in report.ranks}


def test_four_rank_db_preferred_and_equal_to_analysis_db(real):
    folder = real / "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"
    report = open_cluster(folder)
    assert report.source["kind"] == "db" and "db (analysis.db) was read" in report.source["note"]
    ranks = _by_rank(report)
    assert sorted(ranks) == [0, 1, 2, 3]
    for rank in range(4):  # plain sqlite read of the same table
        with _ro(folder / f"rank_{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db") as db:
            row = db.execute("SELECT step, computing, communication_not_overlapped, overlapped, free, bubble, "
                             "preparing FROM StepTraceTime").fetchone()
        got = ranks[rank]
        assert got["step"] == int(row[0])
        assert [got[k] for k in ("computing_us", "communication_not_overlapped_us", "overlapped_us", "free_us",
                                 "bubble_us", "preparing_us")] == pytest.approx(list(row[1:]))
    # rank 2 runs on device 4: the rank id comes from profiler_info_2.json, not the device
    assert ranks[2]["source"].endswith("rank_2_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db")


def test_four_rank_layout_from_metadata(real):
    folder = real / "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"
    report = open_cluster(folder)
    groups = report.groups
    assert groups["sizes"] == {"tp": 1, "pp": 2, "dp": 2, "cp": 1, "ep": 1, "world_size": 4}
    assert groups["pp"] == [[0, 2], [1, 3]] and groups["dp"] == [[0, 1], [2, 3]]
    assert groups["tp"] == [[0], [1], [2], [3]]
    # every recorded pp group agrees with the metadata files themselves
    pp = set()
    for meta in folder.glob("rank_*_ascend_pt/profiler_metadata.json"):
        for info in json.loads(meta.read_text())["parallel_group_info"].values():
            if info["group_name"] == "pp":
                pp.add(tuple(sorted(info["global_ranks"])))
    assert sorted(map(list, pp)) == groups["pp"]
    assert {r["rank"]: r["pp_stage"] for r in report.ranks} == {0: 0, 1: 0, 2: 1, 3: 1}
    # stage rows are the per-stage maxima
    stage1 = next(s for s in report.stages if s["stage"] == 1)
    assert stage1["ranks"] == [2, 3]
    assert stage1["computing_us"] == max(r["computing_us"] for r in report.ranks if r["rank"] in (2, 3))
    # the pipeline imbalance (stage 1 computes ~170 ms more) is named as such, not as a slow rank
    computing = next(f for f in report.slow_ranks if f["part"] == "computing" and f["scope"] == "all ranks")
    assert computing["verdict"] == "stage imbalance" and computing["rank"] == 3
    assert not [f for f in report.slow_ranks if f["verdict"] == "slow rank"]


def test_group_hash_is_msprof_analyze_double_hash(real):
    # the pp group of the 4-rank job is "group_name_19"; its hash is the group id in the matrix
    with _ro(real / "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2/rank_0_ascend_pt/"
                    "ASCEND_PROFILER_OUTPUT/analysis.db") as db:
        p2p_groups = {r[0] for r in db.execute("SELECT group_name FROM CommAnalyzerMatrix WHERE type='p2p'")}
    assert str(group_hash("group_name_19")) in {str(g) for g in p2p_groups}


def test_four_rank_matrix_sums_total_aggregates(real):
    folder = real / "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"
    report = open_cluster(folder)
    # plain recomputation: every rank's "-total" rows, its self link gives the local->global map
    rows = []
    for rank in range(4):
        with _ro(folder / f"rank_{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db") as db:
            rows += [(rank, *r) for r in db.execute(
                "SELECT group_name, hccl_op_name, src_rank, dst_rank, transit_size, transit_time "
                "FROM CommAnalyzerMatrix")]
    pp_hash = str(group_hash("group_name_19"))
    size = sum(r[5] for r in rows if str(r[1]) == pp_hash and r[2].endswith("-total") and r[0] == 0 and r[3] != r[4])
    link = next(m for m in report.matrix if m["group_id"] == pp_hash and m["src"] == 0 and m["dst"] == 2)
    assert link["transport"] == "HCCS" and link["group"] == "pp"
    assert link["size_mb"] == pytest.approx(size)
    assert link["bandwidth_gbps"] == pytest.approx(link["size_mb"] / link["time_ms"])


def test_text_two_rank_equal_to_csv(real):
    folder = real / "cluster_pytorch/msinsight_text_2rank_level2/level2"
    report = open_cluster(folder)
    assert report.source["kind"] == "text"
    for rank in (0, 1):
        with open(folder / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv") as f:
            row = next(csv.DictReader(f))
        got = _by_rank(report)[rank]
        assert got["step"] == int(row["Step"])
        for key, column in KEYS.items():
            assert got[key] == pytest.approx(float(row[column]))
        assert got["preparing_us"] == pytest.approx(float(row["Preparing"]))
    # the job had 8 ranks, 2 profiled: links to ranks 2..7 cannot be placed
    assert {(m["src"], m["dst"]) for m in report.matrix} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert any("not profiled" in w for w in report.warnings)


def test_legacy_prof_devices_sum_overlap_analysis(real):
    folder = real / "msprof_prof_legacy/mindinsight_2dev"
    report = open_cluster(folder)
    assert report.source["kind"] == "msprof timeline"
    for rank, path in ((0, next(folder.glob("PROF_*/device_0/timeline/msprof_*.json"))),
                       (1, next(folder.glob("PROF_*/device_1/timeline/msprof_*.json")))):
        events = json.loads(path.read_text())
        total = {n: sum(float(e.get("dur", 0)) for e in events if e.get("name") == n)
                 for n in ("Computing", "Communication", "Communication(Not Overlapped)", "Free")}
        got = _by_rank(report)[rank]
        assert got["step"] == 1
        assert got["computing_us"] == pytest.approx(total["Computing"])
        assert got["free_us"] == pytest.approx(total["Free"])
        assert got["overlapped_us"] == pytest.approx(total["Communication"] - total["Communication(Not Overlapped)"])


def test_legacy_prof_equal_to_msprof_analyze_adapter(real):
    adapter = pytest.importorskip("msprof_analyze.cluster_analyse.analysis.msprof_step_trace_time_adapter")
    folder = real / "msprof_prof_legacy/mindinsight_2dev"
    report = open_cluster(folder)
    for rank in (0, 1):
        path = next(folder.glob(f"PROF_*/device_{rank}/timeline/msprof_*.json"))
        bean = adapter.MsprofStepTraceTimeAdapter([str(path)]).generate_step_trace_time_data()[0]
        got = _by_rank(report)[rank]
        theirs = dict(bean._data)  # the adapter's own field -> value map
        assert got["computing_us"] == pytest.approx(float(theirs["Computing"]))
        assert got["communication_not_overlapped_us"] == pytest.approx(
            float(theirs["Communication(Not Overlapped)"]))
        assert got["stage_us"] == pytest.approx(float(theirs["Stage"]))


def test_cluster_analysis_output_sixteen_ranks(real):
    folder = real / "cluster_pytorch/cluster_analysis_output_16rank_msinsight"
    report = open_cluster(folder)
    assert report.source["kind"] == "cluster_analysis_output"
    with open(folder / "cluster_analysis_output/cluster_step_trace_time.csv") as f:
        rows = list(csv.DictReader(f))
    ranks = _by_rank(report)
    for row in (r for r in rows if r["Type"] == "rank"):
        for key, column in KEYS.items():
            assert ranks[int(row["Index"])][key] == pytest.approx(float(row[column]))
    assert [s["ranks"] for s in report.stages] == [list(range(8)), list(range(8, 16))]
    assert report.stages[1]["bubble_us"] == pytest.approx(195498.28)
    # within stage 0 rank 5 spends 17.6 ms less in communication than rank 7: the others wait for it
    finding = next(f for f in report.slow_ranks if f["scope"] == "pipeline stage 0")
    assert finding["rank"] == 5 and finding["part"] == "communication" and finding["spread"] > 0.05
    assert "rank 5" in finding["evidence"] and "143.222 ms" in finding["evidence"]
    matrix = json.loads((folder / "cluster_analysis_output/cluster_communication_matrix.json").read_text())
    total = matrix["p2p"]["step2"]["Total Op Info"]["0-8"]
    link = next(m for m in report.matrix if m["src"] == 0 and m["dst"] == 8)
    assert link["transport"] == "RDMA" and link["size_mb"] == pytest.approx(total["Transit Size(MB)"])


def test_cluster_analysis_output_eight_ranks_without_step(real):
    report = open_cluster(real / "cluster_pytorch/cluster_analysis_output_8rank_msprof_analyze")
    assert sorted(_by_rank(report)) == list(range(8))
    assert all(r["step"] is None and r["preparing_us"] is None for r in report.ranks)
    # rank 1: 133 ms of communication against up to 756 ms, and the most free time
    named = {(f["part"], f["rank"]) for f in report.slow_ranks}
    assert ("communication", 1) in named and ("free", 1) in named
    text = str(report)  # an export without step numbers says so, never "step None"
    assert "None" not in text and "the one unnumbered step" in text


# ---------- cross-check against msprof-analyze itself ----------

def _msprof_analyze() -> str | None:
    found = shutil.which("msprof-analyze") or str(Path(sys.executable).with_name("msprof-analyze"))
    return found if Path(found).is_file() else None


def _run_msprof_analyze(src: Path, tmp: Path, drop_db: bool = False) -> Path:
    exe = _msprof_analyze()
    if exe is None:
        pytest.skip("msprof-analyze is not installed")
    data = tmp / "data"
    shutil.copytree(src, data)  # it may write beside its input: never beside the fixtures
    if drop_db:
        for db in data.rglob("analysis.db"):
            db.unlink()
    out = tmp / "out"
    subprocess.run([exe, "cluster", "-d", str(data), "-m", "all", "-o", str(out), "--force"], check=True,
                   capture_output=True, timeout=300, env={**os.environ, "PYTHONPATH": ""})
    return out / "cluster_analysis_output"


@pytest.mark.slow
@pytest.mark.parametrize("name, drop_db", [("msinsight_st_4rank_mindspeed_qwen3", False),
                                           ("msinsight_st_4rank_mindspeed_qwen3", True),
                                           ("msinsight_text_2rank_level2", False),
                                           ("msinsight_db_2rank_level2", False)])
def test_equal_to_msprof_analyze_per_rank(real, tmp_path, name, drop_db):
    src = real / "cluster_pytorch" / name / "level2"
    out = _run_msprof_analyze(src, tmp_path, drop_db)
    if (out / "cluster_step_trace_time.csv").is_file():
        with open(out / "cluster_step_trace_time.csv") as f:
            theirs = {int(r["Index"]): {k: float(r[c]) for k, c in KEYS.items()} | {"step": int(r["Step"])}
                      for r in csv.DictReader(f) if r["Type"] == "rank"}
    else:
        with _ro(out / "cluster_analysis.db") as db:
            theirs = {int(r[0]): dict(zip(["step", *KEYS], r[1:])) for r in db.execute(
                "SELECT [index], step, computing, communication_not_overlapped, overlapped, free, bubble "
                "FROM ClusterStepTraceTime WHERE type='rank'")}
    ours = _by_rank(open_cluster(tmp_path / "data"))
    assert sorted(ours) == sorted(theirs)
    for rank, row in theirs.items():
        assert ours[rank]["step"] == int(row["step"])
        for key in KEYS:
            assert ours[rank][key] == pytest.approx(row[key], abs=1e-6), (rank, key)


@pytest.mark.slow
def test_matrix_equal_to_msprof_analyze(real, tmp_path):
    src = real / "cluster_pytorch/msinsight_db_2rank_level2/level2"
    out = _run_msprof_analyze(src, tmp_path)
    with _ro(out / "cluster_analysis.db") as db:
        theirs = {(int(r[0]), int(r[1])): r[2:] for r in db.execute(
            "SELECT src_rank, dst_rank, transport_type, transit_size, transit_time FROM ClusterCommunicationMatrix "
            "WHERE hccl_op_name = 'Total Op Info'")}
    ours = {(m["src"], m["dst"]): m for m in open_cluster(tmp_path / "data").matrix}
    assert sorted(ours) == sorted(theirs)
    for key, (transport, size, time) in theirs.items():
        assert ours[key]["transport"] == transport
        assert ours[key]["size_mb"] == pytest.approx(size) and ours[key]["time_ms"] == pytest.approx(time)


# ---------- bad input ----------

def _copy(real: Path, tmp_path: Path, name: str) -> Path:
    dst = tmp_path / "c"
    shutil.copytree(real / "cluster_pytorch" / name / "level2", dst)
    return dst


def test_truncated_step_trace_csv_names_file_and_line(real, tmp_path):
    folder = _copy(real, tmp_path, "msinsight_text_2rank_level2")
    path = folder / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv"
    text = path.read_text()
    path.write_text(text[: text.index("\n") + 20])
    with pytest.raises(UserError) as err:
        open_cluster(folder)
    assert "truncated" in err.value.what and "step_trace_time.csv, line 2" in err.value.where


def test_rank_without_step_time_names_folder(real, tmp_path):
    folder = _copy(real, tmp_path, "msinsight_text_2rank_level2")
    (folder / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv").unlink()
    with pytest.raises(UserError) as err:
        open_cluster(folder)
    assert "Rank 0 has no step time" in err.value.what and err.value.where.endswith("rank0_ascend_pt")


def test_db_without_table_names_db_and_table(real, tmp_path):
    folder = _copy(real, tmp_path, "msinsight_db_2rank_level2")
    with sqlite3.connect(folder / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db") as db:
        db.execute("DROP TABLE StepTraceTime")
    with pytest.raises(UserError) as err:
        open_cluster(folder)
    assert "no StepTraceTime table" in err.value.what and "rank1_ascend_pt" in err.value.where


def test_missing_column_and_duplicate_rank(real, tmp_path):
    folder = _copy(real, tmp_path, "msinsight_text_2rank_level2")
    path = folder / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv"
    path.write_text(path.read_text().replace("Free,", "Idle,", 1))
    with pytest.raises(UserError, match="lacks the column.*Free"):
        open_cluster(folder)
    shutil.copytree(real / "cluster_pytorch/msinsight_text_2rank_level2/level2/rank1_ascend_pt",
                    folder / "again_ascend_pt")
    with pytest.raises(UserError, match="Two folders are rank 1"):
        open_cluster(folder)


def test_empty_folder(tmp_path):
    with pytest.raises(UserError, match="No ranks in this folder"):
        open_cluster(tmp_path)


def test_cli_json_keys(real):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "studio", "profile", "cluster", "--json",
                           str(real / "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2")],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    data = json.loads(done.stdout)
    assert set(data) >= {"ranks", "slow_ranks", "slow_links", "matrix", "groups", "source"}
    assert set(data["ranks"][0]) >= {"rank", "step", "computing_us", "communication_not_overlapped_us",
                                     "overlapped_us", "free_us", "bubble_us", "preparing_us"}
    assert set(data["matrix"][0]) >= {"src", "dst", "transport", "size_mb", "time_ms", "bandwidth_gbps"}
    bad = subprocess.run([sys.executable, "-m", "studio", "profile", "cluster", str(REPO / "docs")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode != 0 and "No ranks in this folder" in bad.stderr and "Traceback" not in bad.stderr
