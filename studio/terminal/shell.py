"""An interactive shell on an SSH host (a pty of the window's size), parsed off the GUI thread.

:class:`ShellSession` owns two threads: the *reader* connects, then reads the channel, feeds the
:class:`~studio.terminal.vt.Terminal` and publishes a :class:`~studio.terminal.vt.Snapshot`
at most ~60 times a second however fast output arrives (a flood such as ``yes | head -2000000``
only slows the reader: the SSH window stops the host until we have parsed what came); the
*writer* sends keystrokes and pastes so a full window never blocks the caller. The GUI calls
:meth:`write`, :meth:`resize` and reads :attr:`snapshot`; ``on_update`` tells it (from the reader
thread) that a new snapshot is there. A dropped connection ends the session with a message on
the screen, never an exception in the GUI.
"""

from __future__ import annotations

import logging
import queue
import select
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from studio.terminal.vt import Snapshot

log = logging.getLogger(__name__)

FRAME_S = 1 / 60          # at most one snapshot per frame
CHUNK = 32768             # parse in slices so resizes and snapshots are never far away
Opener = Callable[[], object]   # returns an SshConnection (connects, checks the key, logs in)


class ShellSession:
    """One terminal session; ``state`` is "connecting", "open" or "closed"."""

    def __init__(self, open_connection: Opener, columns: int = 80, lines: int = 24, title: str = "shell",
                 on_update: Callable[[], None] | None = None, term: str = "xterm-256color"):
        self.title = title
        self.state = "connecting"
        self.error: BaseException | None = None
        self._open_connection = open_connection
        self._on_update = on_update or (lambda: None)
        self._term = term
        from studio.terminal.vt import Terminal  # pyte loads when the first terminal opens

        self._terminal = Terminal(columns, lines)
        self._size = (columns, lines)
        self._wanted_size: tuple[int, int] | None = None
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        self._stop = threading.Event()
        self._conn = None
        self._channel = None
        self.snapshot: Snapshot = self._terminal.snapshot()
        self.bytes_received = 0
        self._reader = threading.Thread(target=self._read_loop, name=f"terminal-{title}", daemon=True)
        self._writer = threading.Thread(target=self._write_loop, name=f"terminal-{title}-send", daemon=True)

    def start(self) -> ShellSession:
        self._reader.start()
        return self

    # -- called from the GUI thread: never blocks -------------------------------------------
    def write(self, data: bytes) -> None:
        """Send keystrokes or pasted text to the shell."""
        if self.state != "closed" and data:
            self._outbox.put(data)

    def resize(self, columns: int, lines: int) -> None:
        """The widget changed size: the reader resizes the screen and tells the host."""
        self._wanted_size = (max(2, columns), max(1, lines))

    def close(self) -> None:
        """End the session (closes the channel and the connection)."""
        self._stop.set()
        self._outbox.put(None)
        channel = self._channel
        if channel is not None:
            try:
                channel.close()
            except Exception:
                pass

    def wait_closed(self, timeout: float = 5.0) -> bool:
        if self._reader.is_alive():
            self._reader.join(timeout)
        return not self._reader.is_alive()

    # -- reader thread -----------------------------------------------------------------------
    def _read_loop(self) -> None:
        try:
            self._connect()
            self._pump()
        except Exception as exc:  # noqa: BLE001 - shown on the screen, never raised into the GUI
            self.error = exc
            if not self._stop.is_set():
                what = getattr(exc, "what", None) or str(exc) or type(exc).__name__
                fix = getattr(exc, "fix", None)
                self._message(f"{what}" + (f"\r\n{fix}" if fix else ""))
        finally:
            self.state = "closed"
            self._outbox.put(None)
            self._publish()
            if self._conn is not None:
                try:
                    self._conn.close()
                except Exception:
                    pass

    def _connect(self) -> None:
        self._message(f"Connecting to {self.title}…", newline=False)
        self._conn = self._open_connection()
        if self._stop.is_set():
            return
        self._apply_resize()  # the widget was laid out while we connected: start at its size
        columns, lines = self._size
        if hasattr(self._conn, "open_shell"):  # a local pty (studio.terminal.local_pty)
            channel = self._conn.open_shell(self._term, columns, lines)
        else:
            # An idle shell must survive NAT and firewall timeouts, as OpenSSH's ServerAliveInterval does.
            self._conn.transport.set_keepalive(30)
            channel = self._conn.transport.open_session(timeout=10)
            channel.get_pty(term=self._term, width=columns, height=lines)
            channel.invoke_shell()
        self._channel = channel
        self._terminal.feed(b"\x1b[2J\x1b[H")  # the shell's greeting replaces "Connecting…"
        self.state = "open"
        self._writer.start()

    def _pump(self) -> None:
        channel = self._channel
        if channel is None:
            return
        last_publish = 0.0
        dirty = False
        while not self._stop.is_set():
            self._apply_resize()
            timeout = FRAME_S if dirty else 0.5
            if not channel.recv_ready():
                select.select([channel], [], [], timeout)
            if channel.recv_ready():
                data = channel.recv(CHUNK)
                if not data:
                    break
                self.bytes_received += len(data)
                self._terminal.feed(data)
                replies = self._terminal.pending_replies()
                if replies:
                    self._outbox.put(replies)
                dirty = True
            elif channel.closed or channel.eof_received or channel.exit_status_ready():
                break
            now = time.monotonic()
            if dirty and now - last_publish >= FRAME_S:
                self._publish()
                last_publish, dirty = now, False
        if self._stop.is_set():
            return
        transport_alive = self._conn.alive
        status = channel.exit_status if channel.status_event.is_set() else -1
        if transport_alive or status != -1:
            self._message(f"[session ended{'' if status in (-1, 0) else f' with status {status}'}]")
        else:
            self._message("[connection lost: the host stopped answering or closed the connection]")

    def _apply_resize(self) -> None:
        wanted, self._wanted_size = self._wanted_size, None
        if wanted is None or wanted == self._size:
            return
        self._size = wanted
        self._terminal.resize(*wanted)
        if self._channel is not None:
            try:
                self._channel.resize_pty(width=wanted[0], height=wanted[1])  # window-change
            except Exception:
                pass
        self._publish()

    def _message(self, text: str, newline: bool = True) -> None:
        prefix = b"\r\n" if newline and self._terminal.screen.cursor.x else b""
        self._terminal.feed(prefix + b"\x1b[0;1;33m" + text.encode("utf-8") + b"\x1b[0m" + (b"\r\n" if newline else b""))
        self._publish()

    def _publish(self) -> None:
        self.snapshot = self._terminal.snapshot()
        try:
            self._on_update()
        except Exception:  # the GUI went away; the session keeps its state
            log.debug("terminal update callback failed", exc_info=True)

    # -- writer thread -----------------------------------------------------------------------
    def _write_loop(self) -> None:
        while True:
            data = self._outbox.get()
            if data is None or self._channel is None:
                return
            try:
                self._channel.sendall(data)
            except Exception:  # the reader notices the dead channel and says so
                return
