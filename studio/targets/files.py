"""Atomic file copies: the one routine that writes a file under a temporary name and renames it.

Both the SSH target's ``put`` (ATC inputs, engine files) and deployment sync's SFTP uploads use
:func:`sftp_write_atomic`; a reader — or a cancelled or cut copy — sees the old file or the new
one, never a part. :func:`local_copy_atomic` is the same for this computer.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from studio.errors import Cancelled

REQUEST = 255 * 1024            # SFTP write size OpenSSH accepts; 8x fewer round trips than 32 KiB
CHUNK = 1024 * 1024


def temp_name(path: str, token: str) -> str:
    """``folder/.NAME.studio-part-TOKEN``: the temporary name a file is written under."""
    folder, _, name = path.rpartition("/")
    temp = f".{name}.studio-part-{token}"
    return f"{folder}/{temp}" if folder else temp


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
    temp = local.with_name(temp_name(local.name, secrets.token_hex(4)))
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
    temp = final.with_name(temp_name(final.name, secrets.token_hex(4)))
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
