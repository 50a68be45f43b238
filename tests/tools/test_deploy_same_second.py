"""A local edit in the same second as the last sync (same size) is seen and uploaded.

The state kept after a sync holds the local file's nanosecond mtime and ctime; a scan has them
too, so the comparison is done at that precision: an edit that keeps the size and the second —
or puts the mtime back exactly (the ctime still moves) — is a change, not "unchanged".
"""

from __future__ import annotations

import os

import pytest
from deploy_helpers import actions, connector_for, make_deployment, read_tree, write_tree

from studio.core.jobs import run_job


@pytest.mark.parametrize("mtime", ["same second", "restored"])
def test_a_same_size_edit_in_the_second_of_the_last_sync_is_uploaded(sshd_host, tmp_path, monkeypatch, mtime):
    from studio.tools.deploy.sync import run_job as sync_job

    monkeypatch.setenv("STUDIO_HOME", str(tmp_path / "home"))
    deployment = make_deployment(tmp_path)
    files = {f"f{i}.txt": b"version 1 %d\n" % i for i in range(10)} | {"big.bin": os.urandom(300 * 1024)}
    write_tree(deployment.local_root, files)
    _plan, result = run_job(sync_job(deployment, "sync", connector_for(sshd_host)))
    assert result.ok and result.uploaded == len(files)
    edited = {"f3.txt": b"version 2 3\n", "big.bin": os.urandom(300 * 1024)}  # same sizes
    for name, data in edited.items():
        path = deployment.local_root / name
        before = os.stat(path).st_mtime_ns
        path.write_bytes(data)
        # the same whole second as before, other nanoseconds; or exactly the old mtime back
        os.utime(path, ns=(before, before + 1 if mtime == "same second" else before))
    the_plan, result = run_job(sync_job(deployment, "sync", connector_for(sshd_host)))
    assert {p: a for p, a in actions(the_plan).items() if a != "skip"} == {name: "upload" for name in edited}
    assert result.ok and result.uploaded == len(edited)
    assert read_tree(tmp_path / "remote") == files | edited
