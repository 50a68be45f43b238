"""Atomic file copies: the one routine that writes a file under a temporary name and renames it.

Both the SSH target's ``put`` (ATC inputs, engine files) and deployment sync's SFTP uploads use
:func:`sftp_write_atomic`; a reader — or a cancelled or cut copy — sees the old file or the new
one, never a part. :func:`local_copy_atomic` is the same for this computer.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from studio.core.errors import Cancelled, UserError
from studio.remote.connection import quiet_prefetch

REQUEST = 255 * 1024            # SFTP write size OpenSSH accepts; 8x fewer round trips than 32 KiB
CHUNK = 1024 * 1024


PART = ".studio-part-"
STAGING = ".studio-staging-"
TOKEN_HEX = 32      # 128 random bits: nobody's own file name collides with a run's temporary names
SHORT_NAME = 64     # bytes of the file's own name kept in its temporary name (for people reading a listing)


def new_token() -> str:
    """A run's token: part of every temporary name it creates, and recorded as its own."""
    return secrets.token_hex(TOKEN_HEX // 2)


def temp_name(path: str, token: str) -> str:
    """``folder/.SHORT.studio-part-TOKEN-DIGEST``: the temporary name a file is written under.

    SHORT is at most 64 bytes of the name and DIGEST tells apart names that share them, so the
    temporary name stays far below the 255-byte limit whatever the file's own name (a name of up
    to 255 bytes can always be transferred).
    """
    folder, _, name = path.rpartition("/")
    raw = name.encode("utf-8", "surrogateescape")
    cut = min(SHORT_NAME, len(raw))
    while 0 < cut < len(raw) and (raw[cut] & 0xC0) == 0x80:  # never split a UTF-8 character
        cut -= 1
    short = raw[:cut].decode("utf-8", "surrogateescape")
    digest = hashlib.sha256(raw).hexdigest()[:8]
    temp = f".{short}{PART}{token}-{digest}"
    return f"{folder}/{temp}" if folder else temp


def root_temp_name(path: str, token: str) -> str:
    """The temporary name, in the deployment root itself, of an SFTP upload of ``path``.

    An SFTP write goes by path: written into the file's own folder it would follow a symlink a
    process on the host put there meanwhile. Written in the root (checked by the shell that then
    moves it into place, see ``Uploader._land``), it never passes a subfolder. The digest covers the
    whole path, so files of one name in different folders do not share a temporary name.
    """
    name = path.rpartition("/")[2]
    temp = temp_name(name, token)
    return temp[: -8] + hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def token_of(name: str) -> str | None:
    """The run token in one of our temporary names (a file or a staging folder), else None."""
    if name.startswith(STAGING):
        token = name[len(STAGING):]
    elif name.startswith(".") and PART in name:
        token = name.rpartition(PART)[2][:TOKEN_HEX]
    else:
        return None
    return token if len(token) == TOKEN_HEX and all(c in "0123456789abcdef" for c in token) else None


class ShortWrite(Exception):
    """The host kept fewer bytes than were sent: a write failed there (a full disk, a quota).

    paramiko's pipelined SFTP writes drop the error replies of the writes it does not wait for,
    so a failed write is only seen as a file shorter than what was sent.
    """

    def __init__(self, kept: int, sent: int):
        super().__init__(f"the host kept {kept} of the {sent} bytes sent")
        self.kept, self.sent = kept, sent


class DiskFull(UserError):
    """The host's (or this computer's) disk or quota is full: no further file can be written there."""


SPACE_MARGIN = 1024 * 1024  # less free than this (or than a write needed) counts as full


def free_space(run, folder: str) -> tuple[str, int] | None:
    """(mount point, free bytes) of the file system holding ``folder`` (``df -P``, through ``run``:
    a connection's or a target's ``run``/``run_script``), or None when it cannot be told (the
    folder is gone, no ``df``, the connection is lost)."""
    import shlex

    try:
        status, out, _ = run(f"df -Pk -- {shlex.quote(folder)} | tail -n 1", timeout=30)
    except Exception:  # the connection died meanwhile: the caller reports the lost connection
        return None
    fields = out.decode("utf-8", "replace").split()
    if status != 0 or len(fields) < 6 or not fields[3].isdigit():
        return None
    return " ".join(fields[5:]), int(fields[3]) * 1024


def write_failure(conn, folder: str, name: str, exc: BaseException, needed: int = 0) -> UserError:
    """The error for a write the host refused in ``folder``: :class:`DiskFull` (with the mount point
    and what is free) when its file system is full, else what the host said."""
    where = f"{conn.entry.name}:{folder}"
    space = free_space(conn.run, folder)
    text = str(exc).strip()
    if space is not None and (space[1] < max(SPACE_MARGIN, needed) or "space" in text.lower()):
        mount, free = space
        size = f"{needed / 1e6:.1f} MB needed, " if needed else ""
        return DiskFull(f"The disk of {conn.entry.name} is full: {name} could not be written in {folder} "
                        f"({size}the file system mounted at {mount} has {free / 1e6:.1f} MB free)", where,
                        f"Free space on {conn.entry.name} under {mount} (or choose a folder on another disk), "
                        "then run the same command again.")
    return UserError(f"{conn.entry.name} refused to write {name} in {folder}: {text or type(exc).__name__}", where,
                     "Check the folder's permissions and the free space there, then run the same command again.")


RESUME_MIN = 1024 * 1024  # a shorter partial file is cheaper to send again than to check


def resume_token(local: Path, remote: str) -> str:
    """The token of a single file's upload: the same for the same local file (path, size, mtime)
    going to the same remote path, so a copy a cut stopped is found and resumed by the next one."""
    st = os.stat(local)
    key = f"{os.path.realpath(local)}\0{st.st_size}\0{st.st_mtime_ns}\0{remote}"
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:TOKEN_HEX]


def verified_prefix(conn, remote_part: str | bytes, local_path, size: int, remote_head: bool = False):
    """The SHA-256 state of the local file's first ``size`` bytes when the host's partial file
    ``remote_part`` holds exactly those bytes (with ``remote_head``: when the host's file starts with
    them), else None. The host hashes (``sha256sum``) while this computer does."""
    import shlex
    import threading

    if isinstance(remote_part, bytes):
        remote_part = remote_part.decode("utf-8", "surrogateescape")
    remote: dict = {}
    command = (f"head -c {size} -- {shlex.quote(remote_part)} | sha256sum" if remote_head else
               f"sha256sum < {shlex.quote(remote_part)}")

    def hash_there() -> None:
        try:
            script = f"{command}\n".encode("utf-8", "surrogateescape")
            status, out, _ = conn.run("sh -s", stdin=script, timeout=600)
            remote["hex"] = out.split()[0].decode("ascii") if status == 0 and out.split() else None
        except Exception:  # noqa: BLE001 - no sha256sum, a dropped link: the whole file is sent
            remote["hex"] = None

    worker = threading.Thread(target=hash_there, name="resume-hash", daemon=True)
    worker.start()
    digest = hashlib.sha256()
    with open(local_path, "rb") as handle:
        left = size
        while left > 0:
            chunk = handle.read(min(CHUNK * 8, left))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
    worker.join()
    if left != 0 or remote.get("hex") != digest.hexdigest():
        return None
    return digest


STUCK_S = 1.0  # a clean-up after Ctrl-C or a cancel gets this long before the link is closed under it


def is_interrupt(exc: BaseException) -> bool:
    """Ctrl-C (KeyboardInterrupt), a cancel, or a job closed mid-way: the user is waiting to get out."""
    return isinstance(exc, (KeyboardInterrupt, Cancelled, GeneratorExit))


@contextmanager
def closing_if_stuck(exc: BaseException, close: Callable[[], None] | None, seconds: float = STUCK_S):
    """Around the clean-up after ``exc``: when it is an interrupt (:func:`is_interrupt`) and the
    clean-up has not ended within ``seconds`` — closing a remote file waits for the host's replies,
    which never come on a silent link — ``close()`` (the connection) makes its waits return.

    Without it a Ctrl-C waited until the keepalive gave up on the link (~17 s).
    """
    if close is None or not is_interrupt(exc):
        yield
        return
    import threading

    timer = threading.Timer(seconds, close)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def copy_chunks(source, out, on_chunk: Callable[[int], None] | None = None,
                stop: Callable[[], bool] | None = None) -> int:
    """Copy the readable ``source`` to the writable ``out`` in :data:`CHUNK` pieces until its end;
    ``on_chunk(n)`` is told of each, ``stop()`` returning True raises Cancelled between them.
    Returns the bytes copied."""
    copied = 0
    while chunk := source.read(CHUNK):
        if stop is not None and stop():
            raise Cancelled()
        out.write(chunk)
        copied += len(chunk)
        if on_chunk is not None:
            on_chunk(len(chunk))
    return copied


def sftp_write_atomic(sftp, source, final: str | bytes, temp: str | bytes, mode: int, times: tuple[int, int] | None,
                      on_chunk: Callable[[int], None] | None = None, stop: Callable[[], bool] | None = None,
                      on_abort: Callable[[], None] | None = None,
                      before_rename: Callable[[], None] | None = None, offset: int = 0,
                      rename: Callable[[], None] | None = None, on_stuck: Callable[[], None] | None = None) -> None:
    """Write ``source`` (a readable) to ``temp`` over SFTP, set mode and times, rename onto ``final``.

    ``on_chunk(n)`` is told of every chunk sent; ``stop()`` returning True raises Cancelled
    between chunks. On any failure the temporary file is removed (best effort: a dead link
    leaves it for the next run) and ``on_abort`` runs before the error propagates.
    ``before_rename`` may raise to refuse the rename at the last moment (a folder that changed).
    With ``offset``, ``temp`` already holds that many bytes (a resumed upload) and ``source`` gives
    the rest. ``rename`` replaces the SFTP rename (the caller moves ``temp`` into place itself);
    ``on_stuck`` closes the link when the clean-up after an interrupt hangs (see :func:`closing_if_stuck`).
    """
    remote_file = sftp.open(temp, "r+b" if offset else "wb")
    try:
        remote_file.MAX_REQUEST_SIZE = REQUEST
        remote_file.set_pipelined(True)
        remote_file.chmod(mode)
        if offset:
            remote_file.truncate(offset)  # nothing past what was checked
            remote_file.seek(offset)
        sent = offset + copy_chunks(source, remote_file, on_chunk, stop)
        if times is not None:
            remote_file.utime(times)
        remote_file.close()
        kept = sftp.stat(temp).st_size  # a failed pipelined write shows only here (see ShortWrite)
        if kept != sent:
            raise ShortWrite(kept, sent)
        if before_rename is not None:
            before_rename()
        if rename is not None:
            rename()
        else:
            sftp.posix_rename(temp, final)
    except BaseException as exc:
        if on_abort is not None:
            on_abort()
        with closing_if_stuck(exc, on_stuck):
            try:
                remote_file.close()
                sftp.remove(temp)
            except Exception:  # connection gone: the next run removes the temporary file
                pass
        raise


def sftp_read_atomic(sftp, remote: str, local: Path, on_chunk: Callable[[int], None] | None = None,
                     stop: Callable[[], bool] | None = None, on_stuck: Callable[[], None] | None = None) -> None:
    """Fetch ``remote`` to ``.NAME.studio-part-XXXX`` beside ``local``, then rename onto it
    (``on_stuck``: see :func:`sftp_write_atomic`)."""
    local.parent.mkdir(parents=True, exist_ok=True)
    temp = local.with_name(temp_name(local.name, new_token()))
    try:
        source = sftp.open(remote, "rb")
        try:
            with open(temp, "wb") as out:
                quiet_prefetch(source)
                copy_chunks(source, out, on_chunk, stop)
        except BaseException as exc:
            with closing_if_stuck(exc, on_stuck):  # closing waits for the read-ahead's replies
                try:
                    source.close()
                except Exception:  # the link is gone: the error being raised is the one to report
                    pass
            raise
        source.close()
        os.replace(temp, local)
    finally:
        temp.unlink(missing_ok=True)


def local_copy_atomic(source: Path, final: Path, on_chunk: Callable[[int], None] | None = None,
                      stop: Callable[[], bool] | None = None) -> None:
    """Copy ``source`` to a temporary name beside ``final`` and rename it into place."""
    final.parent.mkdir(parents=True, exist_ok=True)
    temp = final.with_name(temp_name(final.name, new_token()))
    try:
        with open(source, "rb") as src, open(temp, "wb") as out:
            copy_chunks(src, out, on_chunk, stop)
        shutil.copymode(source, temp)
        os.replace(temp, final)
    finally:
        temp.unlink(missing_ok=True)
