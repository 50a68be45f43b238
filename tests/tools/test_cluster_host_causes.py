"""The causes of slow collectives worked out across hosts (``--on ... --comm``), with the hosts'
runs replaced by the same calls made here (the real sshd test is tests/e2e/test_cluster_on_hosts.py):
however few tasks a host sends at a time, the report equals the one of the folders side by side."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from studio.core.jobs import run_job
from studio.core.serial import to_json
from studio.ops import cluster
from studio.tools.profiler.cluster import host_causes
from studio.tools.profiler.cluster.comm_report import comm_parts, open_comm
from studio.tools.profiler.cluster.discover import find_ranks
from tests.tools import synthetic_cluster


def _hosts_here(calls: list):
    """``_on_hosts`` answering each request with what the host's engine prints for it."""
    def on_hosts(requests, _context, _cancel):
        out = {}
        calls.append([request.ask for _host, request in requests.values()])  # one round: every host at once
        for index, (_host, request) in requests.items():
            found = find_ranks(request.folder)
            data = host_causes.answer(found, json.loads(request.ask)) if request.ask else comm_parts(found)
            out[index] = SimpleNamespace(data=json.loads(json.dumps(data)),
                                         ran_on=SimpleNamespace(run_seconds=0.0, engine_reused=True))
        return out
    return on_hosts


@pytest.mark.parametrize("export", ["db", "text"])
@pytest.mark.parametrize("first", [1, 3, 1000])
def test_causes_across_hosts_equal_the_folders_side_by_side(export, first, tmp_path, monkeypatch):
    import shutil

    source = synthetic_cluster.build(tmp_path / "all", export=export)
    placing = {"node1": ["rank0_ascend_pt", "rank2_ascend_pt"], "node2": ["rank1_ascend_pt"]}
    sources = []
    for node, names in placing.items():
        for name in names:
            shutil.copytree(source / name, tmp_path / node / name)
        sources.append((node, str(tmp_path / node)))
    calls: list = []
    monkeypatch.setattr(cluster, "_on_hosts", _hosts_here(calls))
    monkeypatch.setattr(host_causes, "FIRST_TASKS", first)
    ours = to_json(run_job(cluster.run(sources, context=None, mode="comm")).report)
    here = to_json(open_comm(source))
    assert ours["bottlenecks"] == here["bottlenecks"] and len(here["bottlenecks"]) == 2
    assert {(b["slow_rank"], b["verdict"]) for b in ours["bottlenecks"]} == {(1, "host-bound"), (2, "device-bound")}
    assert ours["totals"] == here["totals"] and ours["waits"] == here["waits"]
    rounds = sum(1 for asks in calls if any(asks))
    # one round of questions when a host's first answer holds enough tasks; more when it must send more
    # (a text export's op spans come from communication.json: the two ranks of a verdict are asked
    # for their exact spans first, one more round)
    least = 1 if export == "db" else 2
    assert (rounds == least) if first == 1000 else (rounds > least)
    asked = [q for asks in calls for ask in asks if ask for q in json.loads(ask) if "limit" in q]
    assert max(q["limit"] for q in asked) < 4 * 2 * synthetic_cluster.KERNELS + first  # never the whole timeline
