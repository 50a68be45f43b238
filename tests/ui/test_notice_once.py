"""A job that fails in a panel is said once: one notice on the board, one status line, and the
panel only puts itself back in order (no second rendering of the same failure)."""

from __future__ import annotations

from studio.core.notices import NoticeBoard
from studio.ui.notifier import Notifier


def test_a_failed_open_in_the_graph_panel_is_one_notice_and_one_status_line(qtbot, make_window, ascend_fixtures,
                                                                            tmp_path):
    board = NoticeBoard()  # the window's own board: nothing another test leaves running can post here
    window = make_window(notifier=Notifier(show_dialogs=False, board=board))
    posted, lines = [], []
    board.subscribe(posted.append)
    window.statusBar().messageChanged.connect(lambda text: text and lines.append(text))
    bad = tmp_path / "cut.om"
    bad.write_bytes((ascend_fixtures / "om" / "root_model.om").read_bytes()[:600])
    window.open_paths([bad])
    graph = window.panels["graph"]
    qtbot.waitUntil(lambda: "Could not open cut.om" in graph.left.canvas.empty_text, timeout=10_000)
    qtbot.wait(100)  # anything queued behind the failure (a second report) arrives meanwhile

    assert len(posted) == 1, [n.headline for n in posted]
    notice = posted[0]
    assert notice.source == "Opening cut.om" and notice.expected
    assert str(bad) in notice.where and "OM" in notice.what and notice.fix
    assert window.notifier.history == [notice]
    about_it = [line for line in lines if "cut.om" in line.lower() and "opening" not in line.lower()
                or notice.headline in line]
    assert about_it == [notice.headline], lines
