"""A terminal screen model: the byte stream of a shell in, rows of styled runs out (no Qt).

pyte (pure Python, LGPL-3.0) does the VT100/xterm parsing; this module adds what pyte lacks and
a terminal window needs: a scrollback of lines that scroll off the top, the alternate screen
(DECSET 1049/1047/47, used by vim, less and top), replies to the host's queries (cursor position,
device attributes) and cheap :class:`Snapshot` objects that a GUI can paint from another thread.

It is not thread-safe: one thread (the session's reader) feeds it and takes snapshots; the GUI
only ever sees the immutable snapshots.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

import pyte
from pyte import charsets
from pyte.screens import Margins

ALT_SCREEN_MODES = {1049 << 5, 1047 << 5, 47 << 5}  # pyte stores private modes shifted by 5 bits
APP_CURSOR_MODE = 1 << 5          # DECCKM: arrow keys send ESC O A instead of ESC [ A
BRACKETED_PASTE_MODE = 2004 << 5
JUMP_MIN_CHARS = 4096
_PLAIN = re.compile(r"[\x20-\x7e\r\n]*")  # printable ASCII and line ends: no escapes, tabs or wide chars


@dataclass(frozen=True)
class Style:
    """How a run of cells looks. Colours are pyte's: "default", a name ("red", "brightblue")
    or six hex digits (256-colour and truecolor)."""

    fg: str = "default"
    bg: str = "default"
    bold: bool = False
    italics: bool = False
    underscore: bool = False
    strikethrough: bool = False
    reverse: bool = False


DEFAULT_STYLE = Style()
Run = tuple[str, Style]        # text and its style; a row is a tuple of runs
Row = tuple[Run, ...]


@dataclass(frozen=True)
class Snapshot:
    """What the screen shows at one moment; immutable, so any thread may read it."""

    columns: int
    lines: int
    rows: tuple[Row, ...]
    scrollback: tuple[Row, ...]
    cursor: tuple[int, int]          # (x, y) on the screen
    cursor_visible: bool
    alternate: bool
    app_cursor_keys: bool
    bracketed_paste: bool
    title: str
    version: int

    def text(self, with_scrollback: bool = False) -> str:
        """The plain text shown (trailing blanks removed), one line per row."""
        rows = (self.scrollback if with_scrollback else ()) + self.rows
        return "\n".join("".join(t for t, _ in row).rstrip() for row in rows)


def _style(char) -> Style:
    if (char.fg == "default" and char.bg == "default" and not char.bold and not char.italics
            and not char.underscore and not char.strikethrough and not char.reverse):
        return DEFAULT_STYLE
    return Style(char.fg, char.bg, char.bold, char.italics, char.underscore, char.strikethrough, char.reverse)


def _row(line, columns: int) -> Row:
    runs: list[Run] = []
    text: list[str] = []
    style = None
    # pyte keeps only the cells written to; the blank default cells after them draw nothing.
    width = min(columns, max(line) + 1) if line else 0
    for x in range(width):
        char = line[x]
        if not char.data:   # the second cell of a wide character: the first one covers it
            continue
        s = _style(char)
        if s != style and text:
            runs.append(("".join(text), style))
            text = []
        style = s
        text.append(char.data)
    if text:
        runs.append(("".join(text), style))
    return tuple(runs)


class _Screen(pyte.Screen):
    """pyte's Screen plus scrollback, the alternate screen and query replies."""

    def __init__(self, columns: int, lines: int, scrollback: int):
        self.history: deque = deque(maxlen=scrollback)  # Rows, and raw pyte lines at the end
        self.raw_rows = 0
        self.replies: list[str] = []
        self._saved_main = None
        super().__init__(columns, lines)

    @property
    def alternate(self) -> bool:
        return self._saved_main is not None

    def push_history(self, line) -> None:
        """Keep a row that leaves the screen; it is turned into runs only if a snapshot needs it
        (a flood pushes far more rows than the scrollback keeps)."""
        self.history.append(line)
        self.raw_rows = min(self.raw_rows + 1, len(self.history))

    def settle_history(self) -> None:
        """Turn the raw rows at the end of the scrollback into runs."""
        history, columns = self.history, self.columns
        for i in range(len(history) - self.raw_rows, len(history)):
            history[i] = _row(history[i], columns)
        self.raw_rows = 0

    def history_rows(self) -> tuple[Row, ...]:
        self.settle_history()
        return tuple(self.history)

    def draw(self, data: str) -> None:
        # pyte draws character by character (charset translation, wcwidth, a namedtuple
        # _replace each). Printable ASCII that fits on the line needs none of that: same cells,
        # same cursor, about 3x faster on coloured output such as compiler logs.
        cursor = self.cursor
        x = cursor.x
        if (x + len(data) > self.columns or not data.isascii() or not data.isprintable()
                or (self.g1_charset if self.charset else self.g0_charset) is not charsets.LAT1_MAP
                or pyte.modes.IRM in self.mode):
            super().draw(data)
            return
        attrs = cursor.attrs
        char_type, rest, make = type(attrs), tuple(attrs)[1:], tuple.__new__
        line = self.buffer[cursor.y]
        for char in data:
            line[x] = make(char_type, (char, *rest))
            x += 1
        cursor.x = x
        self.dirty.add(cursor.y)

    def index(self) -> None:
        top, bottom = self.margins or Margins(0, self.lines - 1)
        if self.cursor.y == bottom and top == 0 and not self.alternate:
            self.push_history(self.buffer[0])
        super().index()

    def set_mode(self, *modes, **kwargs) -> None:
        if kwargs.get("private") and {m << 5 for m in modes} & ALT_SCREEN_MODES and not self.alternate:
            self._saved_main = (self.buffer.copy(), self.cursor.x, self.cursor.y, self.margins)
            self.buffer.clear()
            self.dirty.update(range(self.lines))
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes, **kwargs) -> None:
        if kwargs.get("private") and {m << 5 for m in modes} & ALT_SCREEN_MODES and self.alternate:
            buffer, x, y, margins = self._saved_main
            self._saved_main = None
            self.buffer.clear()
            self.buffer.update(buffer)
            self.margins = margins
            self.cursor.x, self.cursor.y = min(x, self.columns - 1), min(y, self.lines - 1)
            self.dirty.update(range(self.lines))
        super().reset_mode(*modes, **kwargs)

    def write_process_input(self, data: str) -> None:
        self.replies.append(data)  # answers to DSR/DA queries go back to the host

    def report_device_attributes(self, mode: int = 0, **kwargs) -> None:
        if mode == 0 and not kwargs.get("private"):
            self.write_process_input("\x1b[?62;22c")  # "VT220 with ANSI colour", as xterm says

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        lines = lines or self.lines
        if lines < self.lines:
            # pyte drops rows from the top of the screen; xterm keeps them: rows above the cursor
            # that no longer fit go to the scrollback, blank rows under the cursor go first.
            drop = max(0, self.cursor.y - lines + 1)
            for y in range(drop):
                if not self.alternate:
                    self.push_history(self.buffer[y])
            for y in range(self.lines - drop):
                self.buffer[y] = self.buffer[y + drop]
            for y in range(lines, self.lines + drop):
                self.buffer.pop(y, None)
            self.cursor.y -= drop
            self.lines = lines
            self.margins = None
        super().resize(lines, columns)


class Terminal:
    """Feed it bytes, resize it, take snapshots; ``pending_replies()`` must go back to the host."""

    def __init__(self, columns: int = 80, lines: int = 24, scrollback: int = 10000):
        self.screen = _Screen(columns, lines, scrollback)
        self.stream = pyte.ByteStream(self.screen)
        self._rows: list[Row] = [()] * lines
        self.screen.dirty.update(range(lines))
        self.version = 0

    @property
    def columns(self) -> int:
        return self.screen.columns

    @property
    def lines(self) -> int:
        return self.screen.lines

    def feed(self, data: bytes) -> None:
        """Parse output from the host (any chunking; UTF-8 split across chunks is fine)."""
        stream = self.stream
        text = stream.utf8_decoder.decode(data) if stream.use_utf8 else "".join(map(chr, data))
        if len(text) >= JUMP_MIN_CHARS and text.count("\n", 0, 1 << 20) > 3 * self.lines:
            self._jump_scroll(text)
        else:
            pyte.Stream.feed(stream, text)
        self.version += 1

    def _jump_scroll(self, text: str) -> None:
        """Parse a flood of plain lines without drawing each one (what xterm calls jump scroll).

        The first line and the last screenful go through pyte; the plain-ASCII lines between them
        would only scroll through the screen, so they go straight to the scrollback. The result
        is the same as drawing them one by one (a test checks it), at a fraction of the cost.
        """
        screen, feed = self.screen, lambda part: pyte.Stream.feed(self.stream, part)
        first = text.index("\n") + 1
        cut = len(text)
        for _ in range(screen.lines):  # the tail keeps the last screenful of lines
            cut = text.rindex("\n", 0, cut)
        cut += 1
        feed(text[:first])
        middle = text[first:cut]
        if cut <= first or not self._can_jump(middle):
            feed(text[first:])
            return
        columns, lines = screen.columns, screen.lines
        rows: list[str] = []
        for line in middle.replace("\r\n", "\n").split("\n")[:-1]:
            rows.extend(line[i:i + columns] for i in range(0, len(line), columns)) if line else rows.append("")
        cy = screen.cursor.y
        kept = [screen.buffer[y] for y in range(cy)]
        total = cy + len(rows)
        to_history = total - (lines - 1)
        attrs = screen.cursor.attrs
        style = _style(attrs)
        history = screen.history
        start = max(0, to_history - (history.maxlen or to_history))
        screen.settle_history()  # raw rows stay at the end of the scrollback, so settle them first
        for index in range(start, to_history):
            if index < cy:
                history.append(_row(kept[index], columns))
            else:
                row = rows[index - cy]
                history.append(((row, style),) if row else ())
        screen.buffer.clear()
        for y, index in enumerate(range(to_history, total)):
            if index < cy:
                screen.buffer[y] = kept[index]
            else:
                line = screen.buffer[y]
                for x, char in enumerate(rows[index - cy]):
                    line[x] = attrs._replace(data=char)
        screen.cursor.x, screen.cursor.y = 0, lines - 1
        screen.dirty.update(range(lines))
        feed(text[cut:])

    def _can_jump(self, middle: str) -> bool:
        screen = self.screen
        if (screen.alternate or screen.margins is not None or screen.cursor.x != 0
                or not self.stream._taking_plain_text or pyte.modes.DECAWM not in screen.mode
                or pyte.modes.IRM in screen.mode or screen.charset != 0 or not _PLAIN.fullmatch(middle)
                or "\r" in middle.replace("\r\n", "")):
            return False
        # Rows under the cursor must be blank: the flood's first rows would merge with them.
        return all(char.data == " " for y in range(screen.cursor.y, screen.lines)
                   for char in screen.buffer[y].values())

    def resize(self, columns: int, lines: int) -> None:
        """Change the screen size (the caller tells the host: window-change)."""
        if (columns, lines) != (self.columns, self.lines):
            self.screen.resize(lines, columns)
            self._rows = [()] * lines
            self.screen.dirty.update(range(lines))
            self.version += 1

    def pending_replies(self) -> bytes:
        """Answers owed to the host's queries since the last call."""
        replies, self.screen.replies = self.screen.replies, []
        return "".join(replies).encode("utf-8")

    def snapshot(self) -> Snapshot:
        """The screen now; only rows that changed since the last snapshot are rebuilt."""
        screen = self.screen
        for y in screen.dirty:
            if 0 <= y < screen.lines:
                self._rows[y] = _row(screen.buffer[y], screen.columns)
        screen.dirty.clear()
        mode = screen.mode
        return Snapshot(
            columns=screen.columns, lines=screen.lines, rows=tuple(self._rows),
            scrollback=screen.history_rows(), cursor=(min(screen.cursor.x, screen.columns - 1), screen.cursor.y),
            cursor_visible=not screen.cursor.hidden, alternate=screen.alternate,
            app_cursor_keys=APP_CURSOR_MODE in mode, bracketed_paste=BRACKETED_PASTE_MODE in mode,
            title=screen.title, version=self.version)
