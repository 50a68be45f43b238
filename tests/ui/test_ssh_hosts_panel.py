"""The Hosts panel against a real sshd: unknown key -> trust dialog -> checklist; changed key refused;
the panel never blocks; "Open terminal" reaches whoever listens."""

from __future__ import annotations

import pytest

from gui_ticks import Ticks

from studio.remote.hosts import HostStore
from studio.remote.known_hosts import KnownHosts
from studio.ui.panels.hosts import HostsPanel


@pytest.fixture
def panel(make_panel, sshd_host, tmp_path):
    entry, _ = sshd_host
    store = HostStore()
    store.put(entry)
    store.save()
    panel = make_panel(HostsPanel, size=(700, 600))
    panel.host_context.known_hosts = KnownHosts(read_only=[], own=tmp_path / "studio_known_hosts")
    return panel


def test_unknown_key_is_trusted_after_confirmation_then_the_checklist_shows(qtbot, panel, sshd):
    asked = []
    panel.confirm_trust = lambda name, address, key_type, fp: asked.append(fp) or True
    assert panel.selected_name() == "testhost"
    with Ticks(10) as ticks:
        panel._buttons["test"].click()
        qtbot.waitUntil(lambda: panel.checklist.status_of("auth") == "ok", timeout=20000)
    fingerprint = sshd.host_key_pub.read_text().split()[1]
    assert len(asked) == 1 and asked[0].startswith("SHA256:")
    assert panel.host_context.known_hosts.own.read_text().split()[2] == fingerprint  # recorded only after "Trust"
    assert panel.checklist.status_of("toolkit") == "missing"
    assert panel.checklist.topLevelItemCount() == len(panel.checklist.result.items)
    assert " missing, 0 failed" in panel._state.text()
    assert len(ticks.gaps) >= 2  # the GUI thread kept ticking while the job connected and probed


def test_declined_key_is_not_recorded(qtbot, panel):
    panel.confirm_trust = lambda *args: False
    handle = panel.test_connection("testhost")
    qtbot.waitUntil(lambda: not handle.active and panel.checklist.result is not None, timeout=10000)
    assert panel.checklist.status_of("hostkey") == "failed" and panel.checklist.status_of("auth") == "skipped"
    assert not panel.host_context.known_hosts.own.exists()


def test_changed_key_is_refused_with_the_line(qtbot, panel, monkeypatch):
    entry = panel.store.get("testhost")
    panel.host_context.known_hosts.own.write_text(f"[{entry.host}]:{entry.port} ssh-ed25519 "
                                     "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    explained = []
    monkeypatch.setattr("studio.ui.panels.hosts.dialogs.explain_changed_key",
                        lambda parent, name, what, fix, where: explained.append(where))
    panel.test_connection("testhost")
    qtbot.waitUntil(lambda: bool(explained), timeout=10000)
    assert explained == [f"{panel.host_context.known_hosts.own}:1"]
    assert panel.checklist.status_of("hostkey") == "failed" and "CHANGED" in panel.checklist.result.item("hostkey").detail


def test_open_terminal_request_and_empty_state(qtbot, panel):
    requested = []
    panel.links.open_terminal.connect(requested.append)
    panel._buttons["terminal"].click()
    assert requested == ["testhost"]
    store = HostStore()
    store.remove("testhost")
    store.save()
    panel.refresh()
    assert panel._empty.isVisible() and not panel._buttons["test"].isEnabled()


def test_host_dialog_validates_and_keeps_no_secret(qtbot):
    from studio.ui.panels.hosts.dialogs import HostDialog

    dialog = HostDialog(None, ["bastion"])
    qtbot.addWidget(dialog)
    dialog.name.setText("bad name!")
    dialog.host.setText("10.0.0.9")
    dialog._on_accept()
    assert dialog.error.isVisibleTo(dialog) and "not usable" in dialog.error.text()
    dialog.name.setText("npu-2")
    dialog.auth.setCurrentIndex(2)  # password
    assert not dialog.key_file.isEnabled()
    dialog.proxy.setCurrentText("bastion")
    entry = dialog.entry()
    assert (entry.name, entry.host, entry.auth, entry.key_file, entry.proxy_jump) == \
        ("npu-2", "10.0.0.9", "password", None, "bastion")


def test_secret_prompt_answers_a_worker_thread(qtbot, monkeypatch):
    import threading

    from studio.ui.widgets.secret_prompt import GuiSecretPrompt

    prompt = GuiSecretPrompt()
    shown_on = []
    monkeypatch.setattr(prompt, "_show", lambda kind, text: shown_on.append(threading.current_thread()) or "s3cret")
    answers = []
    worker = threading.Thread(target=lambda: answers.append(prompt("password", "Password for me@box")))
    worker.start()
    qtbot.waitUntil(lambda: bool(answers), timeout=5000)
    worker.join()
    assert answers == ["s3cret"] and shown_on == [threading.main_thread()]


def test_import_reads_the_ssh_config_off_the_window_thread_and_never_runs_match_exec(qtbot, make_panel, tmp_path,
                                                                                      monkeypatch):
    import threading

    from studio.remote.ssh_config import SshConfig

    marker = tmp_path / "ran"
    config = tmp_path / "config"
    config.write_text(f'Match exec "touch {marker}"\n  User fromexec\nHost lab\n  HostName 10.9.8.7\n')
    panel = make_panel(HostsPanel)
    panel.ssh_config_path = config
    read_on, edited, notes = [], [], []
    real_load = SshConfig.load.__func__
    monkeypatch.setattr(SshConfig, "load",
                        classmethod(lambda cls, path=None: read_on.append(threading.current_thread())
                                    or real_load(cls, path)))
    offered = []
    monkeypatch.setattr("studio.ui.panels.hosts.panel.QInputDialog.getItem",
                        lambda parent, title, label, items, *args: offered.append(items) or (items[0], True))
    monkeypatch.setattr("studio.ui.panels.hosts.panel.QMessageBox.information",
                        lambda parent, title, text: notes.append(text))
    panel._run_dialog = lambda entry, replacing: edited.append(entry)
    panel._buttons["import"].click()
    qtbot.waitUntil(lambda: bool(edited), timeout=10000)
    assert read_on and threading.main_thread() not in read_on
    assert offered == [["lab"]]
    assert (edited[0].host, edited[0].user) == ("10.9.8.7", "")
    assert len(notes) == 1 and "Match exec" in notes[0] and not marker.exists()
