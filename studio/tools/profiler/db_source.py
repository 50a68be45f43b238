"""Opening a user's profiling database (``msprof_*.db``, ``ascend_pytorch_profiler_*.db``) safely.

The database is the user's file. It is opened read-only through a ``file:...?mode=ro`` URI, so
SQLite honours another process's locks (a profiler still writing it) instead of reading pages
half-written, and nothing is ever created beside it: a rollback-journal database read with
``mode=ro`` needs no ``-journal``. A WAL-mode database would get ``-shm``/``-wal`` files even so;
it is opened ``immutable=1`` (a finished export), or, when a ``-wal`` with rows lies beside it,
through :func:`studio.tools.profiler.db_reader.open_readonly`, which reads a private copy.

Before SQLite sees the file its header is checked, so a copy cut short in transfer is named as
such (SQLite itself would only say "malformed" at the first page it misses, maybe minutes in).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from studio.core.errors import UserError
from studio.core.safe_read import check_regular

MAGIC = b"SQLite format 3\x00"
LOCK_WAIT_MS = 1500  # how long a read waits for a writer's lock before saying so
EXPORT_AGAIN = "Export it again (msprof --export=on --type=db, or torch_npu's profiler with export_type db); " \
               "a copy cut short in transfer also does this."
LOCKED_FIX = "Another program is writing this database (a profiler still exporting?): wait until it has " \
             "finished, or close it, then open the file again."


def header_facts(path: Path) -> dict:
    """What the 100-byte header says: page size, pages, WAL mode; a UserError when it is no database
    or the file is shorter than the header says (cut short)."""
    path = Path(path)
    info = check_regular(path, "profiling database")
    with path.open("rb") as handle:
        head = handle.read(100)
    if len(head) < 100 or not head.startswith(MAGIC):
        raise UserError(f"{path.name} is not an SQLite database (its first bytes are not 'SQLite format 3')",
                        path, EXPORT_AGAIN)
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    counter_valid = head[24:28] == head[92:96]  # the page count is trusted only when these agree
    if counter_valid and pages and page * pages > info.st_size:
        raise UserError(f"{path.name} is cut short: its header says {page * pages:,} bytes, the file has "
                        f"{info.st_size:,}", path, EXPORT_AGAIN)
    return {"page_size": page, "pages": pages, "wal": head[18] == 2 or head[19] == 2, "size": info.st_size}


def source_uri(path: Path, wal: bool) -> str:
    """The URI that opens ``path`` read-only with nothing written beside it."""
    flags = "mode=ro&immutable=1" if wal else "mode=ro"
    return f"file:{quote(str(Path(path).resolve()))}?{flags}"


def has_wal_rows(path: Path) -> bool:
    """True when a non-empty ``-wal`` file lies beside ``path`` (committed rows may be in it)."""
    wal = Path(str(path) + "-wal")
    try:
        return wal.is_file() and wal.stat().st_size > 0
    except OSError:
        return False


def connect(path: Path) -> sqlite3.Connection:
    """A read-only connection to the user's database (checked: header, lock, schema readable)."""
    path = Path(path).resolve()
    facts = header_facts(path)
    try:
        db = sqlite3.connect(source_uri(path, facts["wal"]), uri=True, timeout=LOCK_WAIT_MS / 1000)
    except sqlite3.Error as exc:
        raise explain(exc, path) from exc
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        db.close()
        raise explain(exc, path) from exc
    return db


def explain(exc: sqlite3.Error, path: Path) -> UserError:
    """The UserError a failed read of the user's database means (locked, damaged, unreadable)."""
    text = str(exc)
    name = Path(path).name
    if "locked" in text or "busy" in text:
        return UserError(f"{name} is locked by another process ({text})", path, LOCKED_FIX)
    if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text
                                                    or "corrupt" in text):
        return UserError(f"{name} is damaged: SQLite says '{text}'", path, EXPORT_AGAIN)
    if "unable to open" in text or "readonly" in text:
        return UserError(f"{name} cannot be opened for reading ({text})", path,
                         "Check the file and its folder are readable; a leftover -journal beside it means a "
                         "writer stopped part way: export the database again.")
    return UserError(f"{name} cannot be read: {text}", path, EXPORT_AGAIN)


def identity(path: Path) -> str:
    """What makes this file this file for the cache: its resolved path, device, inode, size and
    modification time (a rewrite or a copy over it changes one of them)."""
    path = Path(path).resolve()
    info = os.stat(path)
    return f"{path}|{info.st_dev}|{info.st_ino}|{info.st_size}|{info.st_mtime_ns}"
