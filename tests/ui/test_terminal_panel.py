"""The Terminal panel against a real sshd: typing reaches the shell, output shows, floods don't freeze."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import Qt

from gui_ticks import Ticks

from studio.remote.hosts import HostStore
from studio.ui.panels.terminal import TerminalPanel


@pytest.fixture
def panel(make_panel, sshd_host):
    entry, known = sshd_host
    store = HostStore()
    store.put(entry)
    store.save()
    panel = make_panel(TerminalPanel, size=(900, 500))
    panel.host_context.known_hosts = known
    yield panel
    panel.close_all()
    for tab in panel.tabs():
        tab.session.wait_closed(5)


def _screen(tab) -> str:
    snap = tab.view.snapshot
    return snap.text(with_scrollback=True) if snap else ""


def _type(qtbot, tab, text: str) -> None:
    for char in text:
        if char == "\n":
            qtbot.keyClick(tab.view, Qt.Key.Key_Return)
        else:
            qtbot.keyClicks(tab.view, char)


def test_typing_into_a_live_session_shows_the_output(qtbot, panel):
    assert panel._empty.isVisible() and "Open terminal" in panel._empty.text()
    tab = panel.open_terminal("testhost")
    qtbot.waitUntil(lambda: tab.session.state == "open", timeout=10000)
    qtbot.waitUntil(lambda: tab.view.snapshot.columns == tab.view.grid_size()[0], timeout=5000)
    _type(qtbot, tab, "echo studio-$((6*7)) $COLUMNS\n")
    columns = tab.view.grid_size()[0]
    qtbot.waitUntil(lambda: f"studio-42 {columns}" in _screen(tab), timeout=10000)
    _type(qtbot, tab, "printf '\\033[31mRED\\033[0m\\n'\n")
    qtbot.waitUntil(lambda: any(t == "RED" and s.fg == "red" for row in tab.view.snapshot.rows for t, s in row),
                    timeout=10000)
    # A second tab is an independent session; closing the connection says so in the terminal.
    other = panel.open_terminal("testhost")
    qtbot.waitUntil(lambda: other.session.state == "open", timeout=10000)
    _type(qtbot, other, "exit\n")
    qtbot.waitUntil(lambda: "[session ended]" in _screen(other), timeout=10000)
    qtbot.waitUntil(lambda: panel._tabs.tabText(1) == "testhost (closed)", timeout=5000)
    _type(qtbot, tab, "printf '\\033]0;studio-title\\007'; sleep 2\n")  # a prompt may reset it
    qtbot.waitUntil(lambda: "studio-title" in panel._tabs.tabToolTip(0), timeout=5000)
    assert tab.session.state == "open" and len(panel.tabs()) == 2


def test_resize_sends_window_change(qtbot, panel):
    tab = panel.open_terminal("testhost")
    qtbot.waitUntil(lambda: tab.session.state == "open", timeout=10000)
    panel.resize(600, 300)
    columns, lines = tab.view.grid_size()
    qtbot.waitUntil(lambda: tab.view.snapshot.columns == columns, timeout=5000)
    _type(qtbot, tab, "stty size\n")
    qtbot.waitUntil(lambda: f"{lines} {columns}" in _screen(tab), timeout=10000)


def test_flood_keeps_the_gui_thread_responsive(qtbot, panel):
    tab = panel.open_terminal("testhost")
    qtbot.waitUntil(lambda: tab.session.state == "open", timeout=10000)
    paints_before = tab.view.paints
    start = time.monotonic()
    _type(qtbot, tab, "yes 'flood line with some text' | head -150000; echo FLOOD-DONE-$((1+1))\n")
    with Ticks(10) as ticks:
        qtbot.waitUntil(lambda: "FLOOD-DONE-2" in _screen(tab), timeout=60000)
    elapsed = time.monotonic() - start
    assert tab.session.bytes_received >= 150000 * 27  # "flood line with some text\r\n"
    # The output is read and parsed off the GUI thread: its timer ticks throughout (how long it
    # stalls at worst is a figure of benchmarks/bench_gui_stalls.py, as it depends on load).
    assert len(ticks.gaps) >= 2
    # Repaints are coalesced to about one per frame, not one per chunk of output (a loaded machine
    # paints fewer frames in a longer time: this holds the better).
    assert tab.view.paints - paints_before < elapsed * 70 + 10
    assert len(tab.view.snapshot.scrollback) > 1000  # the flood went to the scrollback


def test_a_dropped_connection_is_a_message_not_a_crash(qtbot, make_panel, tmp_path, private_sshd):
    import subprocess

    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts

    server = private_sshd
    store = HostStore()
    store.put(HostEntry(name="flaky", host=server.host, port=server.port, user=server.user,
                        key_file=str(server.client_key)))
    store.save()
    panel = make_panel(TerminalPanel)
    panel.host_context.known_hosts = KnownHosts(read_only=[server.known_hosts], own=tmp_path / "own")
    tab = panel.open_terminal("flaky")
    qtbot.waitUntil(lambda: tab.session.state == "open", timeout=10000)
    children = subprocess.run(["pgrep", "-P", str(server.proc.pid)], capture_output=True, text=True)
    subprocess.run(["kill", "-9", *children.stdout.split()], check=True)
    qtbot.waitUntil(lambda: "[connection lost" in _screen(tab), timeout=10000)
    assert tab.session.state == "closed"
    _type(qtbot, tab, "ignored\n")  # typing into a closed session is harmless


def test_unknown_host_key_is_explained_in_the_terminal(qtbot, panel, tmp_path):
    from studio.remote.known_hosts import KnownHosts

    panel.host_context.known_hosts = KnownHosts(read_only=[], own=tmp_path / "empty")
    tab = panel.open_terminal("testhost")
    qtbot.waitUntil(lambda: tab.session.state == "closed", timeout=10000)
    qtbot.waitUntil(lambda: "not known yet" in _screen(tab), timeout=5000)
    assert "studio ssh trust testhost" in _screen(tab).replace("\n", "")


def test_local_shell_tab(qtbot, panel):
    panel._hosts.setCurrentIndex(panel._hosts.count() - 1)  # "This computer" comes last
    panel._open.click()
    tab = panel.tabs()[-1]
    qtbot.waitUntil(lambda: tab.session.state == "open", timeout=10000)
    _type(qtbot, tab, "echo local-$((2+3)); tty\n")
    qtbot.waitUntil(lambda: "local-5" in _screen(tab) and "/dev/pts/" in _screen(tab), timeout=10000)
    _type(qtbot, tab, "exit\n")
    qtbot.waitUntil(lambda: "[session ended]" in _screen(tab), timeout=10000)
