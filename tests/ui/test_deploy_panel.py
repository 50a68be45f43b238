"""The Deployment panel against the real sshd: dry-run plan, per-row conflict choice, apply, cancel."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt

from studio.tools.deploy.deployments import Deployment, DeploymentStore
from studio.remote.hosts import HostEntry, HostStore
from studio.ui.panels.deploy import DeployPanel


@pytest.fixture
def panel(make_panel, sshd, studio_home, tmp_path, monkeypatch):
    monkeypatch.setenv("STUDIO_KNOWN_HOSTS", str(sshd.known_hosts))
    hosts = HostStore()
    hosts.put(HostEntry(name="box", host=sshd.host, port=sshd.port, user=sshd.user, key_file=str(sshd.client_key)))
    hosts.save()
    local = tmp_path / "local"
    local.mkdir()
    store = DeploymentStore()
    store.put(Deployment("proj", "box", str(local), str(tmp_path / "remote"), ["*.tmp"]))
    store.save()
    return make_panel(DeployPanel, size=(1000, 500))


def _rows(panel) -> dict[str, str]:
    return {panel.model.item(r).path: panel.model.item(r).action for r in range(panel.model.rowCount())}


def _wait_plan(qtbot, panel):
    qtbot.waitUntil(lambda: panel.plan is not None and not panel._busy(), timeout=10000)


def test_plan_conflict_choice_and_apply(qtbot, panel, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "remote"
    assert panel.current_deployment().name == "proj"
    assert not panel.apply_button.isEnabled()  # nothing to apply before a plan was seen
    (local / "a.txt").write_text("A")
    (local / "scratch.tmp").write_text("excluded")
    panel.mode.setCurrentIndex(panel.mode.findData("sync"))
    qtbot.mouseClick(panel.dry_run_button, Qt.MouseButton.LeftButton)
    _wait_plan(qtbot, panel)
    assert _rows(panel) == {"a.txt": "upload"} and panel.apply_button.isEnabled()
    assert "1 to upload" in panel.summary.text()
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.last_result is not None and panel.plan is not None and not panel._busy(),
                    timeout=10000)
    assert (remote / "a.txt").read_text() == "A" and not (remote / "scratch.tmp").exists()
    assert panel.plan.items == [] and "in sync" in panel.placeholder.text()

    # Both sides changed: the row is a conflict, highlighted, and only applied once a side is chosen.
    (local / "a.txt").write_text("local edit")
    (remote / "a.txt").write_text("remote edit!")
    os.utime(remote / "a.txt", (1_600_000_000, 1_600_000_000))
    panel.last_result = None
    panel.dry_run()
    _wait_plan(qtbot, panel)
    assert _rows(panel) == {"a.txt": "conflict"}
    assert not panel.apply_button.isEnabled() and not panel.keep_local.isEnabled()
    assert panel.model.data(panel.model.index(0, 0), Qt.ItemDataRole.BackgroundRole) is not None
    panel.table.selectRow(0)
    assert panel.keep_remote.isEnabled() and panel.diff_button.isEnabled()
    panel.diff_button.click()  # the text diff arrives from a job, in a non-modal window
    qtbot.waitUntil(lambda: panel.last_diff is not None and not panel._busy(), timeout=10000)
    assert "-local edit" in panel.last_diff and "+remote edit!" in panel.last_diff
    qtbot.mouseClick(panel.keep_remote, Qt.MouseButton.LeftButton)
    assert "keep remote" in panel.model.data(panel.model.index(0, 0))
    assert panel.apply_button.isEnabled()
    panel.apply()
    qtbot.waitUntil(lambda: panel.last_result is not None and not panel._busy(), timeout=10000)
    assert (local / "a.txt").read_text() == "remote edit!"


def test_cancel_a_running_upload(qtbot, panel, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "remote"
    for i in range(6):
        (local / f"big{i}.bin").write_bytes(os.urandom(8_000_000))
    panel.mode.setCurrentIndex(panel.mode.findData("upload"))
    panel.dry_run()
    _wait_plan(qtbot, panel)
    panel.apply()
    assert panel.cancel_button.isEnabled() and not panel.dry_run_button.isEnabled()
    # Cancel as soon as bytes move, the way a user presses Cancel mid-transfer.
    panel._handle.progress.connect(lambda step: step.fraction and panel.cancel_button.isEnabled()
                                   and panel.cancel_button.click())
    qtbot.waitUntil(lambda: not panel._busy(), timeout=10000)
    assert "Cancelled" in panel.summary.text() and panel.last_result is None
    landed = list(remote.glob("big*.bin"))
    assert len(landed) < 6 and all(p.stat().st_size == 8_000_000 for p in landed)  # whole files only
    assert panel.dry_run_button.isEnabled()
    panel.dry_run()
    _wait_plan(qtbot, panel)
    assert len(_rows(panel)) == 6 - len(landed)  # the next run resumes with what is left


def test_an_apply_that_deletes_asks_first(qtbot, panel, tmp_path, monkeypatch):
    remote = tmp_path / "remote"
    remote.mkdir(exist_ok=True)
    (remote / "only_remote.txt").write_text("keep me unless the user says so")
    panel.mode.setCurrentIndex(panel.mode.findData("upload"))
    panel.delete.setChecked(True)
    panel.dry_run()
    _wait_plan(qtbot, panel)
    asked = []
    monkeypatch.setattr(panel, "confirm_deletions", lambda deployment, counts: asked.append(counts) or False)
    panel.apply()
    assert asked and asked[0]["delete-remote"] == 1 and not panel._busy()
    assert (remote / "only_remote.txt").exists()  # declined: nothing ran
    monkeypatch.setattr(panel, "confirm_deletions", lambda deployment, counts: True)
    panel.apply()
    qtbot.waitUntil(lambda: panel.last_result is not None and not panel._busy(), timeout=10000)
    assert not (remote / "only_remote.txt").exists()
