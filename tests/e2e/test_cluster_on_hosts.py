"""Ranks left on their hosts (one folder per host, as training jobs leave them): two host entries
on the real sshd, Studio's engine on each reads its rank in place, both at once, and only the
parts of the report come back. The report equals the one of the two folders side by side here."""

from __future__ import annotations

import json
import shutil

from standins import write_host
from test_cli import run_studio
from test_engine_host import engine_host  # noqa: F401 - the session's engine on the sshd

from studio.tools.profiler.cluster import open_cluster

TEXT = "cluster_pytorch/msinsight_text_2rank_level2/level2"


def test_ranks_summarised_in_place_on_two_hosts_equal_the_folders_side_by_side(
        engine_host, sshd, studio_home, real_profiles, tmp_path):  # noqa: F811
    write_host(studio_home, sshd, name="node1", engine_root=str(engine_host["root"]))
    second = (studio_home / "config" / "hosts.toml").read_text().replace("[hosts.node1]", "[hosts.node2]")
    with open(studio_home / "config" / "hosts.toml", "a") as handle:
        handle.write("\n" + second)
    folders = {}
    for rank, node in ((0, "node1"), (1, "node2")):
        folders[node] = tmp_path / node / "job output"
        shutil.copytree(real_profiles / TEXT / f"rank{rank}_ascend_pt", folders[node] / f"rank{rank}_ascend_pt")
    result = run_studio("profile", "cluster", "--on", f"node1:{folders['node1']}", "--on", f"node2:{folders['node2']}",
                        "--json", home=studio_home, timeout=600)
    assert result.returncode == 0, result.stderr
    ours = json.loads(result.stdout)
    from studio.core.serial import to_json

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
    again = run_studio("profile", "cluster", "--on", f"node1:{folders['node1']}", "--on", f"node2:{folders['node2']}",
                       home=studio_home, timeout=600)
    assert again.returncode == 2 and "Rank 0 is both on node1 and on node2" in again.stderr


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
