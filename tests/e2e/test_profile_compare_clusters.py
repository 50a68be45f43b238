"""`studio profile compare` of two folders of ranks, on real torch_npu exports: rank by rank, matched by
rank id (each rank's id read here from its profiler_info_<rank>.json); one folder of ranks against
one profile is refused, naming a rank folder to give instead."""

from __future__ import annotations

import json
import re

import pytest
from test_cli import run_studio as studio


@pytest.fixture
def clusters(real_profiles):
    root = real_profiles / "cluster_pytorch"
    return root / "msinsight_text_2rank_level2" / "level2", root / "msinsight_st_4rank_mindspeed_qwen3" / "level2"


def rank_ids(folder) -> dict[int, str]:
    """Rank id -> rank folder, from the profiler_info_<rank>.json each rank folder holds."""
    ids = {}
    for info in folder.glob("*_ascend_pt/profiler_info_*.json"):
        ids[int(re.search(r"_(\d+)\.json$", info.name).group(1))] = str(info.parent)
    return ids


def test_two_folders_of_ranks_are_compared_rank_by_rank(clusters, studio_home):
    two, four = clusters
    result = studio("profile", "compare", str(two), str(four), "--json", home=studio_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    base_ids, new_ids = rank_ids(two), rank_ids(four)
    assert sorted(base_ids) == [0, 1] and sorted(new_ids) == [0, 1, 2, 3]
    assert [r["rank"] for r in data["ranks"]] == [0, 1]
    for row in data["ranks"]:  # each rank against the rank of the same id
        assert row["base"] == base_ids[row["rank"]] and row["new"] == new_ids[row["rank"]]
        assert row["comparison"]["base"] == row["base"] and row["summary"]["rows"] == len(row["comparison"]["ops"])
    assert data["only_in_base"] == [] and data["only_in_new"] == [2, 3]
    assert "2 rank(s) compared, matched by rank id" in data["overall"] and "only in new [2, 3]" in data["overall"]
    # the same rank's folder compared alone gives the same rows as the rank's row here
    alone = json.loads(studio("profile", "compare", base_ids[0], new_ids[0], "--json", "--no-rerun",
                              home=studio_home).stdout)
    assert {r["name"] for r in alone["ops"]} == {r["name"] for r in data["ranks"][0]["comparison"]["ops"]}
    text = studio("profile", "compare", str(two), str(four), home=studio_home).stdout
    assert text.splitlines()[2].startswith("overall: 2 rank(s) compared")
    assert re.search(r"^\s+2 only in new: not compared$", text, re.M)
    assert re.search(r"^\s+0\s+148\.786\s", text, re.M)  # rank 0's step: 148.786 ms per ProfilerStep


def test_a_folder_of_ranks_against_one_profile_is_refused_saying_how(clusters, studio_home):
    two, _ = clusters
    rank = two / "rank1_ascend_pt"
    for args, side in (((two, rank), "BASE"), ((rank, two), "NEW")):
        result = studio("profile", "compare", *map(str, args), home=studio_home)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert f"{side} is a folder of 2 ranks and the other side is one profile" in result.stderr
        assert f"Give one rank's folder as {side} (e.g. {two / 'rank0_ascend_pt'})" in result.stderr
