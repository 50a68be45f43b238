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
from pathlib import Path

from studio.errors import Cancelled

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


def token_of(name: str) -> str | None:
    """The run token in one of our temporary names (a file or a staging folder), else None."""
    if name.startswith(STAGING):
        token = name[len(STAGING):]
    elif name.startswith(".") and PART in name:
        token = name.rpartition(PART)[2][:TOKEN_HEX]
    else:
        return None
    return token if len(token) == TOKEN_HEX and all(c in "0123456789abcdef" for c in token) else None


def sftp_write_atomic(sftp, source, final: str | bytes, temp: str | bytes, mode: int, times: tuple[int, int] | None,
                      on_chunk: Callable[[int], None] | None = None, stop: Callable[[], bool] | None = None,
                      on_abort: Callable[[], None] | None = None,
                      before_rename: Callable[[], None] | None = None) -> None:
    """Write ``source`` (a readable) to ``temp`` over SFTP, set mode and times, rename onto ``final``.

    ``on_chunk(n)`` is told of every chunk sent; ``stop()`` returning True raises Cancelled
    between chunks. On any failure the temporary file is removed (best effort: a dead link
    leaves it for the next run) and ``on_abort`` runs before the error propagates.
    ``before_rename`` may raise to refuse the rename at the last moment (a folder that changed).
    """
    remote_file = sftp.open(temp, "wb")
    try:
        remote_file.MAX_REQUEST_SIZE = REQUEST
        remote_file.set_pipelined(True)
        remote_file.chmod(mode)
        while chunk := source.read(CHUNK):
            if stop is not None and stop():
                raise Cancelled()
            remote_file.write(chunk)
            if on_chunk is not None:
                on_chunk(len(chunk))
        if times is not None:
            remote_file.utime(times)
        remote_file.close()
        if before_rename is not None:
            before_rename()
        sftp.posix_rename(temp, final)
    except BaseException:
        if on_abort is not None:
            on_abort()
        try:
            remote_file.close()
            sftp.remove(temp)
        except Exception:  # connection gone: the next run removes the temporary file
            pass
        raise


def sftp_read_atomic(sftp, remote: str, local: Path, on_chunk: Callable[[int], None] | None = None,
                     stop: Callable[[], bool] | None = None) -> None:
    """Fetch ``remote`` to ``.NAME.studio-part-XXXX`` beside ``local``, then rename onto it."""
    local.parent.mkdir(parents=True, exist_ok=True)
    temp = local.with_name(temp_name(local.name, new_token()))
    try:
        with sftp.open(remote, "rb") as source, open(temp, "wb") as out:
            source.prefetch()
            while chunk := source.read(CHUNK):
                if stop is not None and stop():
                    raise Cancelled()
                out.write(chunk)
                if on_chunk is not None:
                    on_chunk(len(chunk))
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
            while chunk := src.read(CHUNK):
                if stop is not None and stop():
                    raise Cancelled()
                out.write(chunk)
                if on_chunk is not None:
                    on_chunk(len(chunk))
        shutil.copymode(source, temp)
        os.replace(temp, final)
    finally:
        temp.unlink(missing_ok=True)
