"""The terminal screen model: colours, cursor movement, line editing, alternate screen, resize,
scrollback, replies to queries, and jump scroll giving the same screen as drawing every line."""

from __future__ import annotations

import random

import pytest

from studio.terminal import vt
from studio.terminal.vt import Terminal


def runs(term: Terminal, y: int) -> list[tuple[str, vt.Style]]:
    return [(t, s) for t, s in term.snapshot().rows[y] if t.strip()]


def test_16_256_and_truecolor_and_attributes():
    term = Terminal(40, 4)
    term.feed(b"\x1b[1;31mA\x1b[0m\x1b[92mB\x1b[38;5;208mC\x1b[48;2;1;2;3mD\x1b[0m\x1b[4;7mE\x1b[0m")
    (a, sa), (b, sb), (c, sc), (d, sd), (e, se) = runs(term, 0)
    assert (a, sa.fg, sa.bold) == ("A", "red", True)
    assert (b, sb.fg) == ("B", "brightgreen")
    assert (c, sc.fg) == ("C", "ff8700")             # xterm 256-colour cube index 208
    assert (d, sd.fg, sd.bg) == ("D", "ff8700", "010203")
    assert (e, se.underscore, se.reverse, se.fg) == ("E", True, True, "default")


def test_cursor_movement_and_line_editing():
    term = Terminal(20, 5)
    term.feed(b"hello world\x1b[5D\x1b[K")            # back 5, erase to end of line
    term.feed(b"\x1b[3;4Hmid")                        # row 3, column 4
    term.feed(b"\x1b[1;1H\x1b[2@>>")                  # insert two blanks at the start, type over them
    term.feed(b"\x1b[5;1Habc\b\bX")                   # backspace twice then overwrite
    lines = term.snapshot().text().split("\n")
    assert lines[0] == ">>hello" and lines[2] == "   mid" and lines[4] == "aXc"
    assert term.snapshot().cursor == (2, 4)
    term.feed(b"\x1b[?25l")
    assert not term.snapshot().cursor_visible


def test_alternate_screen_keeps_the_shell_screen():
    term = Terminal(20, 4)
    term.feed(b"$ vim notes\r\n")
    term.feed(b"\x1b[?1049h\x1b[H\x1b[2Jfull screen app\x1b[?1h")
    snap = term.snapshot()
    assert snap.alternate and snap.app_cursor_keys and snap.text().startswith("full screen app")
    for _ in range(10):
        term.feed(b"\r\n")                             # scrolling on the alternate screen
    assert term.snapshot().scrollback == ()          # never reaches the scrollback
    term.feed(b"\x1b[?1049l\x1b[?1l")
    snap = term.snapshot()
    assert not snap.alternate and not snap.app_cursor_keys
    assert snap.text().split("\n")[0] == "$ vim notes" and snap.cursor == (0, 1)


def test_scrollback_and_resize_keep_lines():
    term = Terminal(10, 3, scrollback=100)
    for i in range(6):
        term.feed(f"line{i}\r\n".encode())
    snap = term.snapshot()
    assert [r[0][0].rstrip() for r in snap.scrollback] == ["line0", "line1", "line2", "line3"]
    term.resize(6, 2)                                  # shrinking pushes rows above the cursor up
    snap = term.snapshot()
    assert (snap.columns, snap.lines) == (6, 2)
    assert snap.text(with_scrollback=True).split("\n") == [f"line{i}" for i in range(6)] + [""]
    term.resize(12, 5)
    term.feed(b"wide enough now")
    assert term.snapshot().text().split("\n")[1] == "wide enough"


def test_queries_are_answered_and_bracketed_paste_is_seen():
    term = Terminal(20, 5)
    term.feed(b"ab\x1b[6n\x1b[c\x1b[?2004h")
    assert term.pending_replies() == b"\x1b[1;3R\x1b[?62;22c"
    assert term.pending_replies() == b""
    assert term.snapshot().bracketed_paste


def test_utf8_split_across_chunks_and_wide_characters():
    term = Terminal(20, 2)
    data = "模型 ü ok".encode()
    for i in range(len(data)):
        term.feed(data[i:i + 1])
    assert term.snapshot().text().split("\n")[0] == "模型 ü ok"


@pytest.mark.parametrize("chunk", [4096, 32768])
def test_jump_scroll_gives_the_same_screen_as_drawing_every_line(monkeypatch, chunk):
    random.seed(chunk)
    lines = [("%d:" % i + "x" * 90)[:n] for i, n in enumerate(random.choice([0, 3, 29, 30, 31, 75])
                                                              for _ in range(4000))]
    data = ("\x1b[32mgreen\x1b[0m\r\n" + "\r\n".join(lines) + "\r\n\x1b[1mend").encode()

    def screen(jump: bool):
        monkeypatch.setattr(vt, "JUMP_MIN_CHARS", 4096 if jump else 1 << 60)
        term = Terminal(30, 6, scrollback=10000)
        for i in range(0, len(data), chunk):
            term.feed(data[i:i + chunk])
        return term.snapshot()

    fast, slow = screen(True), screen(False)
    assert fast.text(with_scrollback=True) == slow.text(with_scrollback=True)
    assert fast.cursor == slow.cursor and fast.rows == slow.rows
    assert len(fast.scrollback) > 4000


def test_same_cells_as_plain_pyte_for_coloured_and_wrapped_output():
    import pyte

    data = b"".join(b"\x1b[1;3%dm[%4d]\x1b[0m \x1b[48;5;%dmop_%d\x1b[0m %s\xc3\xbc\t|\r\n"
                    % (i % 8, i, i % 256, i, b"w" * (i % 50)) for i in range(300))
    data += b"\x1b(0lqqk\x1b(B \x1b[4hins\x1b[4l"  # line-drawing charset and insert mode take pyte's path
    ours = Terminal(37, 9)
    theirs = pyte.Screen(37, 9)
    stream = pyte.ByteStream(theirs)
    for i in range(0, len(data), 1000):
        ours.feed(data[i:i + 1000])
        stream.feed(data[i:i + 1000])
    assert [dict(ours.screen.buffer[y]) for y in range(9)] == [dict(theirs.buffer[y]) for y in range(9)]
    assert (ours.screen.cursor.x, ours.screen.cursor.y) == (theirs.cursor.x, theirs.cursor.y)
