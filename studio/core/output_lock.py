"""One run at a time per output folder: two runs given the same ``-o`` would mix their files.

The lock is an exclusive ``flock`` on ``.NAME.studio-lock`` beside the folder NAME, held for the
run and removed after it. The kernel lets go of it when the process ends, however it ends, so a
killed run never leaves a lock that blocks the next one. Where ``fcntl`` does not exist (Windows)
nothing is locked.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from studio.core.errors import UserError


def lock_path(folder: Path) -> Path:
    folder = Path(folder).absolute()
    return folder.with_name(f".{folder.name}.studio-lock")


@contextmanager
def output_lock(folder: Path, what: str = "run") -> Iterator[None]:
    """Hold ``folder``'s lock while inside; a UserError naming the holder when another run has it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = lock_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 300).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise UserError(f"Another Studio {what} is writing {folder} ({holder}); two runs into one folder would "
                            "mix their files", folder, "Wait for it to finish, or give this run another output "
                            "folder (-o).") from None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break  # still the file at that name (not one a finishing run just removed)
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, since {time.strftime('%H:%M:%S')}".encode())
        yield
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        os.close(fd)
