"""Batched remote file operations: one shell script per batch, every name quoted.

Per-file SFTP calls cost a round trip each (5,000 files x 20 ms RTT = 100 s); a script sent on
stdin to ``sh -s`` does a whole batch in one. Scripts are bytes, so names that are not valid
UTF-8 (kept as surrogate escapes) reach the remote as the original bytes.
"""

from __future__ import annotations

import shlex
import threading

from studio.core.errors import UserError

CHUNK = 400  # names per mv/rm command line, far below ARG_MAX
ROOT_MOVED = 7  # exit status of a script whose root is not the real folder the plan saw


def q(text: str) -> bytes:
    """Shell-quote ``text`` and encode it back to the original bytes."""
    return shlex.quote(text).encode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def run_bytes(conn, command: bytes, timeout: float = 600) -> tuple[int, bytes, bytes]:
    """Run one command line given as bytes (names need not be valid UTF-8)."""
    return conn.run("sh -s", stdin=command + b"\n", timeout=timeout)


def enter_root(root: str) -> bytes:
    """``cd`` into the real remote ``root`` and check that it still IS that folder (``pwd -P``).

    A root a process on the host replaced by a symlink after the scan resolves elsewhere: the
    script then exits with ROOT_MOVED before touching anything.
    """
    return (b"cd -- " + q(root) + b' 2>/dev/null && [ "$(pwd -P)" = ' + q(root) +
            b" ] || exit " + str(ROOT_MOVED).encode())


def enter_folder(folder: str, create: bool = False) -> bytes:
    """A ``sh`` condition, for a shell standing in the real root (``$R`` its ``pwd -P``): ``cd`` into
    ``folder`` one name at a time (``cd -P``), each step checked with ``pwd -P`` to be the root's
    folder of that name — true only when every step is a real folder, never a symlink.

    Whatever happens to the path afterwards, the shell's working folder stays the folder it
    checked: what it then does to ``./NAME`` happens there (act on the pinned folder, not on a
    path that may be re-resolved through a symlink put in between). With ``create``, a missing
    step is made (``mkdir``, in the pinned folder above it).
    """
    parts = folder.split("/")
    steps = []
    for depth, name in enumerate(parts):
        make = (b"{ [ -e " + q(name) + b" ] || [ -L " + q(name) + b" ] || mkdir -- " + q(name) + b"; } && ") if create \
            else b""
        steps.append(make + b"cd -P -- " + q(name) + b' 2>/dev/null && [ "$(pwd -P)" = "$R"/' +
                     q("/".join(parts[: depth + 1])) + b" ]")
    return b" && ".join(steps)


def root_moved(conn, root: str):
    """The refusal for a script that found its root replaced (see :func:`enter_root`)."""
    from studio.targets.transfer.safe_paths import WriteRefused

    return WriteRefused(f"the remote root {root} is not the folder the plan saw (gone, or replaced by a symlink "
                        "on the host after the scan); nothing was written there",
                        f"{conn.entry.name}:{root}", "Look at what changed on the host, then plan again.")


def run_script(conn, lines: list[bytes], what: str, timeout: float = 600, root: str | None = None) -> bytes:
    """Run ``lines`` with ``sh -s`` (stops at the first failing command); UserError with stderr on failure.

    With ``root``, the script is run inside it (:func:`enter_root` first); a root found replaced
    raises ``WriteRefused`` and nothing ran.
    """
    if root is not None:
        lines = [enter_root(root), *lines]
    script = b"set -e\n" + b"\n".join(lines) + b"\n"
    status, out, err = conn.run("sh -s", stdin=script, timeout=timeout)
    if root is not None and status == ROOT_MOVED:
        raise root_moved(conn, root)
    if status != 0:
        text = err.decode("utf-8", "replace").strip().splitlines()
        raise UserError(f"{what} failed on {conn.entry.name}: {text[-1] if text else f'exit status {status}'}",
                        f"{conn.entry.name}", "Check the remote folder's permissions and free space, then run again.")
    return out


def prepare_root(conn, remote: str, create: bool) -> str | None:
    """The remote root's real absolute path (created first when ``create``); None when it is missing.

    ``create`` is for a root the plan saw missing: it must still be missing (a symlink put there
    since the scan is refused with ``WriteRefused``) and is made with a plain ``mkdir``.
    """
    import posixpath

    from studio.targets.transfer.scan import remote_root_expr

    root = remote_root_expr(remote).encode("utf-8", "surrogateescape")
    path = remote[2:] if remote.startswith("~/") else remote
    lines = [b"if [ -e " + root + b" ] || [ -L " + root + b" ]; then exit " + str(ROOT_MOVED).encode() + b"; fi",
             b"mkdir -p -- " + q(posixpath.dirname(path.rstrip("/")) or ".") + b" && mkdir -- " + root] if create else []
    lines += [b"cd -- " + root + b" 2>/dev/null || exit 3", b"pwd -P"]
    status, out, err = conn.run("sh -s", stdin=b"\n".join(lines) + b"\n", timeout=60)
    if status == 3:
        return None
    if create and status == ROOT_MOVED:
        from studio.targets.transfer.safe_paths import WriteRefused

        raise WriteRefused(f"the remote root {remote} appeared on the host after the scan (the plan saw none); "
                           "nothing was written there", f"{conn.entry.name}:{remote}", "Look at it, then plan again.")
    if status != 0:
        raise UserError(f"Cannot create the remote folder {remote}: {err.decode('utf-8', 'replace').strip()}",
                        conn.entry.name, "Check the path and that the remote user may write there.")
    return out.decode("utf-8", "surrogateescape").rstrip("\n")


def create_root_sftp(conn, remote: str) -> str:
    """:func:`prepare_root` with ``create`` over SFTP: no remote shell (whose start-up files cost
    ~0.1-0.3 s per command on hosts with pyenv or conda set-ups), the same rules.

    The folders above are made as ``mkdir -p`` would (an existing one is used, through a symlink
    too); the root itself with one plain ``mkdir``, which fails when anything (a symlink put there
    since the scan too) is there: that is ``WriteRefused``. Returns the root's real path.
    """
    import posixpath
    import stat

    from studio.targets.transfer.safe_paths import WriteRefused

    sftp = conn.sftp()
    path = (remote[2:] if remote.startswith("~/") else remote).rstrip("/") or "/"
    parts = [p for p in path.split("/") if p]
    above = "/" if path.startswith("/") else ""
    for part in parts[:-1]:
        above = posixpath.join(above, part) if above else part
        try:
            sftp.mkdir(encode(above))
        except OSError:
            try:
                if not stat.S_ISDIR(sftp.stat(encode(above)).st_mode):
                    raise NotADirectoryError(f"{above} is not a folder") from None
            except OSError as exc:
                raise UserError(f"Cannot create the remote folder {remote}: {above}: {exc.strerror or exc}",
                                conn.entry.name, "Check the path and that the remote user may write there.") from None
    try:
        sftp.mkdir(encode(path), 0o755)
    except OSError as exc:
        try:
            sftp.lstat(encode(path))
        except OSError:
            raise UserError(f"Cannot create the remote folder {remote}: {exc.strerror or exc}", conn.entry.name,
                            "Check the path and that the remote user may write there.") from None
        raise WriteRefused(f"the remote root {remote} appeared on the host after the scan (the plan saw none); "
                           "nothing was written there", f"{conn.entry.name}:{remote}",
                           "Look at it, then plan again.") from None
    return sftp.normalize(encode(path))


def by_folder(paths: list[str]) -> dict[str, list[tuple[int, str]]]:
    """``{folder: [(index in paths, name), ...]}``, folders in a stable order."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for index, path in enumerate(paths):
        folder, _, name = path.rpartition("/")
        groups.setdefault(folder, []).append((index, name))
    return dict(sorted(groups.items()))


def delete_files(conn, root: str, paths: list[str], expected: dict | None = None,
                 hashes: dict | None = None) -> list[str]:
    """``rm -f`` the files (relative to ``root``), in batches; returns those left alone.

    Each folder's files are deleted by a subshell that entered the folder (:func:`enter_folder`) and
    names them ``./NAME`` there: a folder exchanged for a symlink on the host is never deleted
    through (its files are left alone and returned). With ``expected`` (path -> the FileInfo the
    plan saw), each file is deleted only if it is still that file (checked on the host just before
    its ``rm``: see ``stat_check_line``, with the content's SHA-256 from ``hashes`` where known); one
    that changed since the plan is kept and returned.
    """
    if not paths:
        return []
    from studio.targets.transfer.safe_paths import stat_check_line

    lines = [b"R=$(pwd -P)"]
    for folder, members in by_folder(paths).items():
        body = [b"set --"]
        for index, name in members:
            if expected is None:
                body.append(b'set -- "$@" ' + q(name))
            else:
                path = f"{folder}/{name}" if folder else name
                body.append(b"if " + stat_check_line(name, expected.get(path), q, (hashes or {}).get(path)) +
                            b'; then set -- "$@" ' + q(name) + b"; else echo changed " + str(index).encode() + b"; fi")
            if len(body) % CHUNK == 0:
                body.append(b'[ $# -eq 0 ] || rm -f -- "$@"; set --')
        body.append(b'[ $# -eq 0 ] || rm -f -- "$@"')
        if folder:
            refused = b"".join(b"echo changed " + str(index).encode() + b"; " for index, _ in members)
            lines.append(b"( " + enter_folder(folder) + b" || { " + refused + b"exit 0; }\n" + b"\n".join(body) +
                         b"\n)")
        else:
            lines += body
    out = run_script(conn, lines, "Deleting remote files", root=root)
    kept = [int(line.split()[1]) for line in out.decode("ascii", "replace").splitlines() if line.startswith("changed ")]
    return [paths[i] for i in kept]


def remove_leftovers(conn, root: str, paths: list[str]) -> None:
    """Delete temporary files and staging folders an interrupted run left behind (each by name in
    its entered folder, as :func:`delete_files`; never through a symlink)."""
    if not paths:
        return
    lines = [b"R=$(pwd -P)"]
    for folder, members in by_folder(paths).items():
        rm = b"rm -rf -- " + b" ".join(q(name) for _, name in members)
        lines.append(b"( " + enter_folder(folder) + b" && " + rm + b" ) || :" if folder else rm)
    run_script(conn, lines, "Removing temporary files of an interrupted run", root=root)


class CheckShell:
    """One ``sh`` kept open on the host, inside the root, answering yes/no conditions one at a time.

    For the SFTP writes' last check (:func:`~studio.targets.transfer.safe_paths.stat_check_line`):
    SFTP gives whole seconds only, and a command per file would pay the login shell's start-up
    each time; this pays it once per run, then one round trip per question. Thread-safe.
    """

    ANSWER = b"studio-check-"

    def __init__(self, conn, root: str):
        self._stream = ExecStream(conn, enter_root(root) + b" && exec sh")
        self._lock = threading.Lock()
        self._buffer = b""
        try:
            self._stream.write(b"R=$(pwd -P)\n")  # for enter_folder
        except OSError:
            pass  # the first question says the shell is gone

    def holds(self, condition: bytes) -> bool:
        """True when ``condition`` (a sh condition) holds; False when not, or when the shell is gone."""
        return self.status(b"{ " + condition + b"; }") == 0

    def status(self, command: bytes) -> int | None:
        """The exit status of ``command`` (one sh command, a subshell for anything that ``cd``s:
        the shell itself stays in the root); None when the shell is gone."""
        with self._lock:
            try:
                self._stream.write(command + b"\necho " + self.ANSWER + b"$?\n")
                while True:
                    line, found, rest = self._buffer.partition(b"\n")
                    if found:
                        self._buffer = rest
                        if line.startswith(self.ANSWER) and line[len(self.ANSWER):].isdigit():
                            return int(line[len(self.ANSWER):])
                        continue  # something a start-up file printed
                    chunk = self._stream.channel.recv(65536)
                    if not chunk:
                        return None
                    self._buffer += chunk
            except OSError:
                return None

    def close(self) -> None:
        self._stream.close()


# What we let the host send ahead on a stream we read (a download): paramiko's 2 MiB window and
# 32 KiB packets cost a Python round of packet handling per 32 KiB and stall a long link; measured
# on loopback, `cat` of 200 MB ran at 330-420 MB/s with those and 440-470 MB/s with these.
RECEIVE_WINDOW = 8 * 1024 * 1024
RECEIVE_PACKET = 256 * 1024  # OpenSSH's largest packet


class ExecStream:
    """A remote command with its stdin/stdout as a stream (for tar); stderr gathered on a thread.

    ``receiving``: mostly read from (a download), with a larger window and packets.
    """

    def __init__(self, conn, command: bytes | str, timeout: float = 60, receiving: bool = False):
        self.conn = conn
        size = {"window_size": RECEIVE_WINDOW, "max_packet_size": RECEIVE_PACKET} if receiving else {}
        self.channel = conn.transport.open_session(timeout=timeout, **size)
        self.channel.settimeout(None)
        self.channel.exec_command(command)
        self._err = bytearray()
        self._err_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err_thread.start()

    def _drain_stderr(self) -> None:
        try:
            while True:
                data = self.channel.recv_stderr(65536)
                if not data:
                    return
                self._err += data
        except Exception:  # the channel died; the main thread reports it
            return

    def write(self, data: bytes) -> int:
        self.channel.sendall(data)
        return len(data)

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            chunks = []
            while chunk := self.channel.recv(1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        out = bytearray()
        while len(out) < size:
            chunk = self.channel.recv(size - len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def finish(self) -> tuple[int, str]:
        """Close our side, wait for the exit status; (status, stderr text)."""
        try:
            self.channel.shutdown_write()
        except Exception:  # already closed by the remote
            pass
        status = self.channel.recv_exit_status()
        self._err_thread.join(timeout=5)
        return status, self._err.decode("utf-8", "replace").strip()

    def close(self) -> None:
        try:
            self.channel.close()
        except Exception:  # the connection is already gone; there is nothing left to close
            pass
