"""A lean tar writer for upload batches: ustar headers built directly, PAX only when needed.

``tarfile`` spends ~50 µs of Python per member on generic header code (measured: 0.6 s of CPU
for 5,000 small files, a fifth of the whole upload on a 2-core machine). Plain names — ASCII,
up to 100 bytes — get a hand-built ustar header here; anything else (long or non-ASCII names)
goes through ``tarfile``'s PAX header, which GNU tar reads.
"""

from __future__ import annotations

import tarfile

BLOCK = 512
FLUSH = 1024 * 1024


def _ustar_header(name: bytes, mode: int, size: int, mtime: int) -> bytes:
    header = bytearray(BLOCK)
    header[0:len(name)] = name
    header[100:108] = b"%07o\0" % mode
    header[108:116] = b"0000000\0"     # uid, gid: the remote tar runs with --no-same-owner
    header[116:124] = b"0000000\0"
    header[124:136] = b"%011o\0" % size
    header[136:148] = b"%011o\0" % max(mtime, 0)
    header[148:156] = b" " * 8         # checksum is computed with this field as spaces
    header[156:157] = b"0"             # regular file
    header[257:265] = b"ustar\x0000"
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header)


def header_for(name: str, mode: int, size: int, mtime: int) -> bytes:
    """The tar header block(s) for one regular file."""
    try:
        raw = name.encode("ascii")
    except UnicodeEncodeError:
        raw = None
    if raw is not None and len(raw) <= 100 and size < 8 ** 11 and 0 <= mtime < 8 ** 11:
        return _ustar_header(raw, mode, size, mtime)
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, mtime, mode
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


class TarWriter:
    """Writes members to ``sink`` (a callable taking bytes) in large chunks."""

    def __init__(self, sink):
        self.sink = sink
        self.buffer = bytearray()

    def add(self, name: str, mode: int, mtime: int, data_source, size: int) -> None:
        """Add a file of exactly ``size`` bytes read from ``data_source.read``."""
        self.buffer += header_for(name, mode, size, mtime)
        remaining = size
        while remaining:
            chunk = data_source.read(min(remaining, FLUSH))
            if not chunk:
                raise OSError(f"{name} shrank while it was being sent")
            self.buffer += chunk
            remaining -= len(chunk)
            if len(self.buffer) >= FLUSH:
                self.flush()
        self.buffer += b"\0" * (-size % BLOCK)
        if len(self.buffer) >= FLUSH:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.sink(bytes(self.buffer))
            self.buffer.clear()

    def close(self) -> None:
        """End the archive (two zero blocks) and send what is left."""
        self.buffer += b"\0" * (2 * BLOCK)
        self.flush()


class BackgroundSender:
    """Sends chunks on a thread, so reading and hashing the next files overlaps the SSH writes.

    ``sendall`` waits whenever the remote window is full; meanwhile the job's thread keeps
    building the archive (file reads and hashing release the GIL). At most ``depth`` chunks wait.
    An error on the sending side (a cut connection) is raised by the next :meth:`put` or :meth:`close`.
    """

    def __init__(self, send, depth: int = 8):
        import queue
        import threading

        self._send = send
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="deploy-send", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            chunk = self._queue.get()
            if chunk is None:
                return
            if self._error is None:
                try:
                    self._send(chunk)
                except BaseException as exc:  # noqa: BLE001 - handed to the producer
                    self._error = exc

    def put(self, chunk: bytes) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(chunk)

    def close(self) -> None:
        """Wait until everything queued was sent; raise the sending error if there was one."""
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def abandon(self) -> None:
        """Stop without waiting for the queue (cancel, errors): the channel is closed next."""
        import queue

        self._error = self._error or RuntimeError("abandoned")
        while True:  # drop what was not sent, so the stop mark always fits
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._queue.put_nowait(None)
