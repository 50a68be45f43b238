"""Ranks left on their hosts (one folder per host, as training jobs leave them): two host entries
on the real sshd, Studio's engine on each reads its rank in place, both at once, and only the
parts of the report come back. The report equals the one of the two folders side by side here —
the step split and matrix, the collective report (--comm, with the slow ops' causes worked out
across hosts) and the labelled free gaps (--free)."""

from __future__ import annotations

import json
import shutil

import pytest

from standins import write_host
from test_cli import run_studio
from test_engine_host import engine_host  # noqa: F401 - the session's engine on the sshd

from studio.core.serial import to_json
from studio.tools.profiler.cluster import open_cluster
from studio.tools.profiler.cluster.comm_report import open_comm
from studio.tools.profiler.cluster.free_gaps import open_free
from tests.tools import synthetic_cluster

TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"
DB = "cluster_pytorch/msinsight_db_2rank_level2/level2"


def _two_hosts(studio_home, sshd, engine_host) -> None:
    """Host entries node1 and node2, both the session's sshd with its engine."""
    write_host(studio_home, sshd, name="node1", engine_root=str(engine_host["root"]))
    second = (studio_home / "config" / "hosts.toml").read_text().replace("[hosts.node1]", "[hosts.node2]")
    with open(studio_home / "config" / "hosts.toml", "a") as handle:
        handle.write("\n" + second)


def _spread(source, tmp_path, placing: dict[str, list[str]]) -> dict[str, object]:
    """Copies of ``source``'s rank folders, each host's into its own folder."""
    folders = {}
    for node, names in placing.items():
        folders[node] = tmp_path / node / "job output"
        for name in names:
            shutil.copytree(source / name, folders[node] / name)
    return folders


def _on(folders: dict) -> list[str]:
    return [arg for node, folder in folders.items() for arg in ("--on", f"{node}:{folder}")]


def test_ranks_summarised_in_place_on_two_hosts_equal_the_folders_side_by_side(
        engine_host, sshd, studio_home, real_profiles, tmp_path):  # noqa: F811
    _two_hosts(studio_home, sshd, engine_host)
    folders = _spread(real_profiles / TEXT, tmp_path, {"node1": ["rank0_ascend_pt"], "node2": ["rank1_ascend_pt"]})
    result = run_studio("profile", "cluster", *_on(folders), "--json", home=studio_home, timeout=600)
    assert result.returncode == 0, result.stderr
    ours = json.loads(result.stdout)
    here = to_json(open_cluster(real_profiles / TEXT))
    strip = [{k: v for k, v in row.items() if k != "source"} for row in ours["ranks"]]
    assert strip == [{k: v for k, v in row.items() if k != "source"} for row in here["ranks"]]
    assert ours["matrix"] == here["matrix"] and ours["matrix"]  # links between the two hosts' ranks placed
    assert ours["slow_ranks"] == here["slow_ranks"] and ours["slow_links"] == here["slow_links"]
    assert ours["groups"] == here["groups"]
    assert [r["source"].split(":", 1)[0] for r in ours["ranks"]] == ["node1", "node2"]
    hosts = ours["source"]["hosts"]
    assert [(h["host"], h["ranks"]) for h in hosts] == [("node1", [0]), ("node2", [1])]
    sizes = [sum(p.stat().st_size for p in folders[h["host"]].rglob("*") if p.is_file()) for h in hosts]
    assert all(h["bytes"] * 20 < size for h, size in zip(hosts, sizes))  # parts, not folders, travelled
    # a rank on both hosts is refused, naming both
    shutil.copytree(folders["node1"] / "rank0_ascend_pt", folders["node2"] / "rank0_ascend_pt")
    again = run_studio("profile", "cluster", *_on(folders), home=studio_home, timeout=600)
    assert again.returncode == 2 and "Rank 0 is both on node1 and on node2" in again.stderr


@pytest.mark.parametrize("export", ["db", "text"])
def test_comm_on_two_hosts_equals_the_folders_side_by_side(engine_host, sshd, studio_home, tmp_path,
                                                           export):  # noqa: F811
    """The synthetic cluster (rank 1's host slow, rank 2's device slow) with rank 1 alone on node2:
    each verdict rests on one rank of each host, so the causes are worked out across the hosts (from
    the profiler dbs, or from the text export's trace_view.json files)."""
    _two_hosts(studio_home, sshd, engine_host)
    source = synthetic_cluster.build(tmp_path / "synthetic", export=export)
    folders = _spread(source, tmp_path, {"node1": ["rank0_ascend_pt", "rank2_ascend_pt"], "node2": ["rank1_ascend_pt"]})
    result = run_studio("profile", "cluster", *_on(folders), "--comm", "--json", home=studio_home, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    ours, here = json.loads(result.stdout), to_json(open_comm(source))
    for key in ("ops", "totals", "waits", "group_waits", "groups", "sources_of_causes", "bottlenecks"):
        assert ours[key] == here[key], key
    assert {(b["slow_rank"], b["verdict"]) for b in ours["bottlenecks"]} == {(1, "host-bound"), (2, "device-bound")}
    assert ours["rank_folders"] == {"0": f"node1:{folders['node1'] / 'rank0_ascend_pt'}",
                                    "1": f"node2:{folders['node2'] / 'rank1_ascend_pt'}",
                                    "2": f"node1:{folders['node1'] / 'rank2_ascend_pt'}"}
    text = run_studio("profile", "cluster", *_on(folders), "--comm", home=studio_home, timeout=600)
    assert text.returncode == 0 and "host-bound" in text.stdout and "read in place on node2" in text.stdout


def test_free_on_two_hosts_equals_the_folders_side_by_side(engine_host, sshd, studio_home, real_profiles,
                                                            tmp_path):  # noqa: F811
    """Both real 2-rank sets (the text export's trace_view.json, the db export's tables)."""
    _two_hosts(studio_home, sshd, engine_host)
    for name, folder in (("text", TEXT), ("db", DB)):
        folders = _spread(real_profiles / folder, tmp_path / name,
                          {"node1": ["rank0_ascend_pt"], "node2": ["rank1_ascend_pt"]})
        result = run_studio("profile", "cluster", *_on(folders), "--free", "--json", home=studio_home, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        ours, here = json.loads(result.stdout), to_json(open_free(real_profiles / folder))
        assert ours["gaps"] and ours["totals"]
        for key in ("gaps", "totals", "ranks", "warnings"):
            assert ours[key] == here[key], (name, key)
        sizes = [sum(p.stat().st_size for p in f.rglob("*") if p.is_file()) for f in folders.values()]
        assert len(result.stdout) * 5 < min(sizes), name  # the labelled gaps travelled, not the timelines


def test_a_folder_like_an_option_is_refused_and_home_is_the_host_s(engine_host, studio_home, real_profiles,
                                                                    tmp_path):  # noqa: F811
    from sshd_server import running_sshd

    from studio.ops.cluster import Request

    assert Request("--help").to_argv()[0] == "./--help"  # never an option of the host's engine
    home = tmp_path / "hosthome"  # (sshd's SetEnv takes no spaces)
    shutil.copytree(real_profiles / TEXT / "rank0_ascend_pt", home / "job" / "rank0_ascend_pt")
    # a host whose login home is `home` (nothing of this computer's home is touched)
    with running_sshd(tmp_path / "sshd", [f"SetEnv HOME={home}"]) as server:
        write_host(studio_home, server, name="node1", engine_root=str(engine_host["root"]))
        option = run_studio("profile", "cluster", "--on", "node1:--help", home=studio_home, timeout=600)
        assert option.returncode == 2 and "starts with '-'" in option.stderr, option.stderr[-2000:]
        tilde = run_studio("profile", "cluster", "--on", "node1:~/job", "--json", home=studio_home, timeout=600)
    assert tilde.returncode == 0, tilde.stderr[-2000:]
    ours = json.loads(tilde.stdout)
    assert [r["rank"] for r in ours["ranks"]] == [0] and ours["source"]["hosts"][0]["folder"] == "~/job"
