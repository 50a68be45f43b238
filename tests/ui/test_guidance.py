"""Empty states say what is missing and hold the button that fixes it; forms accept only what is valid."""

from __future__ import annotations

from PySide6.QtWidgets import QDialogButtonBox, QPushButton

from studio.remote.hosts import HostEntry, HostStore


def _buttons(widget) -> dict[str, QPushButton]:
    return {b.text(): b for b in widget.findChildren(QPushButton) if b.isVisible()}


def test_add_deployment_ok_waits_for_a_valid_form_and_offers_to_add_a_host(qtbot, tmp_path):
    from studio.ui.panels.deploy.add_dialog import AddDeploymentDialog

    def add_host() -> list[str]:
        store = HostStore()
        store.put(HostEntry(name="npu-box", host="10.0.0.5"))
        store.save()
        return ["npu-box"]

    dialog = AddDeploymentDialog([], parent=None, add_host=add_host)
    qtbot.addWidget(dialog)
    dialog.show()
    ok = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled()
    assert "`" not in " ".join(label.text() for label in dialog.findChildren(type(dialog.error)))  # no CLI quoting
    _buttons(dialog)["Add a host…"].click()
    assert dialog.host.currentText() == "npu-box" and "Add a host…" not in _buttons(dialog)
    dialog.name.setText("proj")
    dialog.local.setText(str(tmp_path))
    assert not ok.isEnabled()  # the remote folder is still empty
    dialog.remote.setText("/home/me/proj")
    assert ok.isEnabled()
    ok.click()
    assert dialog.deployment is not None and dialog.deployment.host == "npu-box"


def test_hosts_and_terminal_empty_states_hold_the_add_button(make_panels):
    from studio.ui.panels.hosts import HostsPanel
    from studio.ui.panels.terminal import TerminalPanel

    hosts, terminal, links = make_panels(HostsPanel, TerminalPanel, size=(1000, 600))
    asked = []
    hosts._on_add = lambda: asked.append("hosts")  # the dialog itself is the Hosts panel's test
    links.add_host.disconnect()
    links.add_host.connect(lambda: asked.append("link"))
    on_hosts, on_terminal = _buttons(hosts), _buttons(terminal)
    assert {"Add a host…", "Import from ~/.ssh/config…"} <= set(on_hosts)
    assert "Test connection" not in on_hosts and "Open terminal" not in on_hosts  # nothing to test yet
    assert "Add a host…" in on_terminal
    on_terminal["Add a host…"].click()
    assert asked == ["link"]


def test_run_and_accuracy_empty_states_offer_their_actions(qtbot, make_panel):
    from studio.ui.panels.accuracy import AccuracyPanel
    from studio.ui.panels.run import RunPanel

    run = make_panel(RunPanel)
    edits = []
    run.links.edit_run_configurations.connect(lambda: edits.append(True))
    _buttons(run)["Edit configurations…"].click()
    assert edits == [True]
    accuracy = make_panel(AccuracyPanel)
    assert {"Open a comparison CSV…", "Compare dumps…"} <= set(_buttons(accuracy))
    assert "`" not in accuracy.empty.text()


def test_deployment_gallery_and_profiler_empty_states(qtbot, make_panel):
    from studio.ui.panels.deploy import DeployPanel
    from studio.ui.panels.gallery import GalleryPanel
    from studio.ui.panels.profiler import ProfilerPanel

    deploy = make_panel(DeployPanel)
    assert "Add a deployment…" in _buttons(deploy) and not deploy.dry_run_button.isVisible()
    assert "`" not in deploy.empty.text()
    assert {"Run a model over pictures…", "Open a results folder…"} <= set(_buttons(make_panel(GalleryPanel)))
    assert {"Profile a model…", "Open a file…", "Open a folder…"} <= set(_buttons(make_panel(ProfilerPanel)))
