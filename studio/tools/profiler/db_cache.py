"""The query cache of a profiling database: the columns the timeline needs, in time order, built once.

A user's msprof / PyTorch-NPU database has no index on the times of most tables (``CANN_API`` is
keyed by connection, ``MSTX_EVENTS`` by nothing), and Studio must never add one beside the file.
So the first open copies, inside SQLite (no Python object per row, memory bounded by SQLite's
page cache), the slices' lane, start, duration, name and category into a cache database under
``studio.core.paths.cache_dir()/profiler-db/``, kept in (lane, start) order by its key, and a pyramid of
per-bucket summaries (:data:`FACTOR` times wider per level), its coarse levels also copied with
their names into one small table (``overview``) that a whole-session frame reads front to back.
Every later open of the same file (same path, inode, size and modification time) only opens the cache.

A first frame from a cache no longer in the page cache costs a disk read per page it touches, so
the cache's pages are 64 KiB (a lane's whole-session summaries are one or two pages, where 4 KiB
pages made a 1.25 GB export's first frame 351 scattered page reads) and the overview keeps what that
frame shows in one contiguous run of the file.

The cache is written as ``<key>.part-<pid>`` and renamed into place only after its last table is
complete and a ``complete`` row is written, so a crash or a full disk never leaves a cache that
would be trusted later; on a failure the part file is deleted and the error says which disk.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken
from studio.core.lru import oldest_over_limit, touch
from studio.core.safe_read import check_regular
from studio.tools.profiler import db_counters, db_source
from studio.core import paths
from studio.tools.profiler.db_reader import MIN_OUTSIDE_NS, session_window

CACHE_VERSION = 8  # bump whenever the cache's tables or what goes into them change
BASE_NS = 65536    # level 1 buckets (finer ones hold about as many rows as the slices); level k: x FACTOR ** (k - 1)
FACTOR = 8
OVERVIEW_BUCKETS = 8192  # the overview holds the levels of at most this many buckets across the session
PAGE_SIZE = 65536  # SQLite's largest page: fewest reads for a cold first frame (see above)
KIND_TASK, KIND_API, KIND_MSTX = 0, 1, 2
HCCL_CAT = -2      # a communication task's category ("HCCL")
SLICE_TABLES = ("TASK", "CANN_API", "MSTX_EVENTS")
_NO_NAME = "x'00'"  # a NULL name while the names are summed (a blob: never a name's id or text)

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE api_types(id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE lanes(id INTEGER PRIMARY KEY, kind INTEGER, a INTEGER, b INTEGER, n INTEGER DEFAULT 0,
                   maxdur INTEGER DEFAULT 0, first INTEGER, last INTEGER, UNIQUE(kind, a, b));
CREATE TABLE task_names(gid INTEGER PRIMARY KEY, name, cat);
CREATE TABLE slices(lane INTEGER, bucket INTEGER, start INTEGER, ref INTEGER, dur INTEGER, name, cat, a INTEGER,
                    PRIMARY KEY(lane, bucket, start, ref)) WITHOUT ROWID;
CREATE TABLE lod(level INTEGER, lane INTEGER, up INTEGER, bucket INTEGER, n INTEGER, start INTEGER, "end" INTEGER,
                 busy INTEGER, PRIMARY KEY(level, lane, up, bucket)) WITHOUT ROWID;
CREATE TABLE lod_names(level INTEGER, lane INTEGER, up INTEGER, bucket INTEGER, longest INTEGER, name,
                       PRIMARY KEY(level, lane, up, bucket)) WITHOUT ROWID;
CREATE TABLE overview(level INTEGER, lane INTEGER, up INTEGER, bucket INTEGER, n INTEGER, start INTEGER,
                      "end" INTEGER, busy INTEGER, longest INTEGER, name, PRIMARY KEY(level, lane, up, bucket))
                      WITHOUT ROWID;
CREATE TABLE name_stats(name, kind INTEGER, n INTEGER, total INTEGER, low INTEGER, high INTEGER);
"""


STALE_PART_S = 600
# The part file is renamed only when whole: no journal is needed to protect it. The sorts behind
# the GROUP BYs and ORDER BYs spread over the cores (SQLite's worker threads), in a larger cache.
_PRAGMAS = (f"PRAGMA page_size={PAGE_SIZE}; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
            f"PRAGMA cache_size=-131072; PRAGMA threads={max(1, min(4, os.cpu_count() or 1))};")
MAX_BYTES = 8 << 30  # the least recently opened caches go beyond this (a 20 GB set needs ~7 GB)


def cache_folder() -> Path:
    """Where the databases' query caches live (beside the traces' cache, not in it: its eviction
    takes every folder in it for one trace)."""
    return paths.cache_dir() / "profiler-db"


def cache_path(source: Path) -> Path:
    """The cache database of ``source`` (it changes whenever the file does)."""
    key = hashlib.sha1(f"{db_source.identity(source)}|{CACHE_VERSION}".encode()).hexdigest()[:24]
    return cache_folder() / f"{key}.sqlite"


def reader_uri(path: Path) -> str:
    """The URI a complete cache is read through. ``immutable``: a cache is never written once it is
    in place (a changed file gets a cache of another name), so SQLite neither locks it nor reads
    its change counter again before every statement."""
    return f"file:{quote(str(path))}?mode=ro&immutable=1"


def is_complete(path: Path) -> bool:
    """True when ``path`` is a whole cache of this version (anything else is rebuilt)."""
    if not path.is_file():
        return False
    try:
        db = sqlite3.connect(reader_uri(path), uri=True)
        try:
            rows = dict(db.execute("SELECT key, value FROM meta"))
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return rows.get("complete") == "1" and rows.get("version") == str(CACHE_VERSION)


def ensure(source: Path, progress: Callable[[str], None] | None = None, cancel: CancelToken | None = None) -> Path:
    """The complete cache of ``source``, built now when there is none; a UserError when the source
    cannot be read or the cache cannot be written, Cancelled when ``cancel`` stops the build
    (SQLite's statement in progress is interrupted; nothing half-written is left)."""
    source = Path(source).resolve()
    check_regular(source, "profiling database")  # missing, a folder, a FIFO: said before its identity is asked
    final = cache_path(source)
    if is_complete(final):  # built from this very file (path, inode, size, time): nothing to read in it
        touch(final)
        return final
    db_source.connect(source).close()  # locked, damaged, not a database: said before any cache work
    folder = final.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cache_error(exc, folder) from exc
    _drop_stale_parts(final)
    part = final.with_name(f"{final.name}.part-{os.getpid()}")
    try:
        with _attachable(source) as uri:
            _build(part, uri, source, progress or (lambda _text: None), cancel)
        os.replace(part, final)
        evict(keep=final)
    except sqlite3.Error as exc:
        _unlink(part)
        if cancel is not None and cancel.cancelled:
            raise Cancelled() from exc
        text = str(exc)
        if "full" in text or "disk I/O" in text or "too large" in text:
            raise _cache_error(exc, folder) from exc
        raise db_source.explain(exc, source) from exc
    except OSError as exc:
        _unlink(part)
        raise _cache_error(exc, folder) from exc
    except BaseException:
        _unlink(part)  # cancelled or any other failure: no part file stays behind
        raise
    return final


def evict(keep: Path | None = None, limit: int = MAX_BYTES) -> None:
    """Delete the least recently opened caches until the folder is under ``limit`` bytes."""
    entries = []
    for path in cache_folder().glob("*.sqlite"):
        try:
            info = path.stat()
        except OSError:
            continue
        entries.append((info.st_mtime, info.st_size, path))
    total = sum(size for _, size, _ in entries)
    for path in oldest_over_limit([e for e in entries if e[2] != keep], total, limit):
        _unlink(path)  # a window open on it keeps reading it (the file lives until it is closed)


def _cache_error(exc: BaseException, folder: Path) -> UserError:
    free = shutil.disk_usage(folder).free if folder.exists() else 0
    return UserError(f"Studio's query cache of the database could not be written ({exc}); "
                     f"{free / 2**20:,.0f} MiB free there. Nothing was kept and the database is untouched", folder,
                     "Free space on that disk (or delete old caches in it), or point STUDIO_HOME at a disk with "
                     "room, then open the database again.")


def _unlink(path: Path) -> None:
    for extra in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(f"{path}{extra}")
        except FileNotFoundError:
            pass
        except OSError:
            pass


def _drop_stale_parts(final: Path) -> None:
    """Part files no build has written for a while (a crash, a kill) are deleted: a build writes
    its part file all along, so one untouched for :data:`STALE_PART_S` is nobody's."""
    now = time.time()
    for part in final.parent.glob(f"{final.name}.part-*"):
        try:
            if now - part.stat().st_mtime > STALE_PART_S:
                _unlink(part)
        except OSError:
            pass


@contextmanager
def _attachable(source: Path):
    """A URI SQLite can ATTACH read-only; a WAL database with rows in its ``-wal`` is copied first
    into a private folder (its rows are only readable through a ``-shm`` SQLite would create)."""
    facts = db_source.header_facts(source)
    if not (facts["wal"] and db_source.has_wal_rows(source)):
        yield db_source.source_uri(source, facts["wal"])
        return
    tmp = Path(tempfile.mkdtemp(prefix="studio-db-"))
    try:
        shutil.copyfile(source, tmp / source.name)
        shutil.copyfile(f"{source}-wal", tmp / f"{source.name}-wal")
        yield f"file:{quote(str(tmp / source.name))}?mode=ro"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build(part: Path, uri: str, source: Path, progress: Callable[[str], None], cancel: CancelToken | None) -> None:
    db = sqlite3.connect(f"file:{quote(str(part))}", uri=True, timeout=db_source.LOCK_WAIT_MS / 1000,
                         check_same_thread=False)  # interrupted from the cancelling thread
    forget = cancel.on_cancel(db.interrupt) if cancel is not None else (lambda: None)
    told = progress

    def progress(text: str) -> None:  # between statements: a cancel that came meanwhile stops here
        told(text)
        if cancel is not None:
            cancel.raise_if_cancelled()

    try:
        db.executescript(_PRAGMAS)
        db.execute("ATTACH DATABASE ? AS src", (uri,))
        tables = {r[0] for r in db.execute("SELECT name FROM src.sqlite_master WHERE type='table'")}
        if not tables & {*SLICE_TABLES, "SESSION_TIME_INFO"}:
            raise UserError(f"{source.name} holds no msprof tables (TASK, CANN_API, MSTX_EVENTS)", source,
                            db_source.EXPORT_AGAIN)
        db.executescript(_SCHEMA)
        if "STRING_IDS" in tables:
            db.execute("INSERT INTO strings SELECT id, value FROM src.STRING_IDS")
        if "ENUM_API_TYPE" in tables:
            db.execute("INSERT INTO api_types SELECT id, name FROM src.ENUM_API_TYPE")
        keep, outside = _session_filter(db, tables)
        # The slices are kept in (lane, bucket, start) order by their key (no index beside them), so
        # every pass reads them front to back. They are written in the export's row order, not
        # sorted first: its rows come about in time order per lane, so each insert lands near the
        # last of its lane (a few hot pages), where an ORDER BY sorted millions of rows on disk.
        progress("copying the slices' columns into the cache")
        _copy_slices(db, tables, keep)
        progress("summarising the slices per time bucket")
        _build_levels(db)
        db.execute('UPDATE lanes SET (n, first, last) = (SELECT sum(n), min(start), max("end") FROM lod '
                   'WHERE level = 1 AND lod.lane = lanes.id)')
        db.execute("UPDATE lanes SET maxdur = (SELECT max(longest) FROM lod_names WHERE level = 1 "
                   "AND lod_names.lane = lanes.id)")
        db.execute("DELETE FROM lanes WHERE n IS NULL")  # only other-clock events: no row on the timeline
        _build_overview(db)
        _name_stats(db)
        progress("reading the usage counters")
        _store_counters(db, uri, source)
        meta = {"version": CACHE_VERSION, "source": str(source), "identity": db_source.identity(source),
                "outside": outside, **_session_meta(db, tables)}
        db.executemany("INSERT INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in meta.items()])
        db.commit()
        db.execute("DETACH DATABASE src")
        db.execute("INSERT INTO meta VALUES ('complete', '1')")  # last: its presence marks a whole cache
        db.commit()
    finally:
        forget()
        db.close()


def _store_counters(db: sqlite3.Connection, uri: str, source: Path) -> None:
    """The file's usage counters into the cache, read once as the full reader reads them."""
    db.executescript(db_counters.SCHEMA)
    src = sqlite3.connect(uri, uri=True)
    try:
        db_counters.store(db, src, dict(db.execute("SELECT id, value FROM strings")), source.name)
    finally:
        src.close()


def _name_stats(db: sqlite3.Connection) -> None:
    """Per (name, lane kind): count, total, shortest and longest. A GROUP BY would sort every slice
    by name; an upsert into a table of a few hundred names is one pass (1.5x faster on millions).
    A NULL name (no row of a primary key would ever clash with another) is kept as a blob no name is."""
    db.execute("CREATE TEMP TABLE name_sums(name, kind INTEGER, n INTEGER, total INTEGER, low INTEGER, high INTEGER, "
               "PRIMARY KEY(name, kind))")
    db.execute(f"""INSERT INTO name_sums SELECT coalesce(s.name, {_NO_NAME}), l.kind, 1, s.dur, s.dur, s.dur
                   FROM slices s JOIN lanes l ON l.id = s.lane WHERE true
                   ON CONFLICT(name, kind) DO UPDATE SET n = n + 1, total = total + excluded.total,
                   low = min(low, excluded.low), high = max(high, excluded.high)""")  # noqa: S608 - fixed text
    db.execute(f"INSERT INTO name_stats SELECT nullif(name, {_NO_NAME}), kind, n, total, low, high FROM name_sums")
    db.execute("DROP TABLE name_sums")


def _session_meta(db: sqlite3.Connection, tables: set[str]) -> dict:
    session = session_window(db, tables, "src.")
    return {} if session is None else {"session_start": session[0], "session_end": session[1]}


def _session_filter(db: sqlite3.Connection, tables: set[str]) -> tuple[str, int]:
    """The SQL condition keeping the events of the collection window (as the full reader keeps
    them: another clock's events lie hours away), and how many it leaves out."""
    session = session_window(db, tables, "src.")
    if session is None:
        return "1", 0
    lo, hi = session
    margin = max(MIN_OUTSIDE_NS, hi - lo)
    keep = f"NOT (x.endNs < {lo - margin} OR x.startNs > {hi + margin})"
    outside = sum(db.execute(f"SELECT count(*) FROM src.{t} x WHERE NOT ({keep})").fetchone()[0]  # noqa: S608
                  for t in SLICE_TABLES if t in tables)
    return keep, outside


def _copy_slices(db: sqlite3.Connection, tables: set[str], keep: str) -> None:
    if "TASK" in tables:
        if "COMPUTE_TASK_INFO" in tables:
            db.execute("INSERT OR IGNORE INTO task_names SELECT globalTaskId, name, taskType "
                       "FROM src.COMPUTE_TASK_INFO")
        if "COMMUNICATION_TASK_INFO" in tables:  # the first row of a task names it, after compute's
            db.execute(f"INSERT OR IGNORE INTO task_names SELECT globalTaskId, name, {HCCL_CAT} "
                       "FROM src.COMMUNICATION_TASK_INFO ORDER BY rowid")
        db.execute(f"INSERT OR IGNORE INTO lanes(kind, a, b) SELECT DISTINCT {KIND_TASK}, deviceId, streamId "
                   "FROM src.TASK")
        # A task of no known op is named by its type, or "task <id>" (a negative name) without one.
        db.execute(f"""INSERT INTO slices
            SELECT l.id, x.startNs / {BASE_NS}, x.startNs, x.rowid, x.endNs - x.startNs,
                   coalesce(n.name, CASE WHEN x.taskType IN (SELECT id FROM strings) THEN x.taskType
                                         ELSE -1 - x.taskId END),
                   coalesce(n.cat, x.taskType), x.taskId
            FROM src.TASK x NOT INDEXED JOIN lanes l ON l.kind = {KIND_TASK} AND l.a IS x.deviceId AND l.b IS x.streamId
            LEFT JOIN task_names n ON n.gid = x.globalTaskId WHERE {keep} """)  # noqa: S608 - fixed text
    for table, kind, cat, extra in (("CANN_API", KIND_API, "x.type", "x.connectionId"),
                                    ("MSTX_EVENTS", KIND_MSTX, "NULL", "NULL")):
        if table not in tables:
            continue
        db.execute(f"INSERT OR IGNORE INTO lanes(kind, a, b) SELECT DISTINCT {kind}, globalTid & 4294967295, 0 "
                   f"FROM src.{table}")  # noqa: S608 - fixed names
        name = "x.name" if table == "CANN_API" else "x.message"
        db.execute(f"""INSERT INTO slices
            SELECT l.id, x.startNs / {BASE_NS}, x.startNs, x.rowid, x.endNs - x.startNs, {name}, {cat}, {extra}
            FROM src.{table} x JOIN lanes l ON l.kind = {kind} AND l.a = (x.globalTid & 4294967295) AND l.b = 0
            WHERE {keep} """)  # noqa: S608 - fixed names


def _build_levels(db: sqlite3.Connection) -> None:
    """Level 1 from the slices, each next level from the one below, until one bucket spans a lane."""
    level = 1
    while True:
        for statement in level_statements(level):
            db.execute(statement)
        if not db.execute("SELECT 1 FROM lod WHERE level = ? GROUP BY lane HAVING count(*) > 1 LIMIT 1",
                          (level,)).fetchone():
            break
        level += 1
    db.execute("INSERT INTO meta VALUES ('levels', ?)", (str(level),))


def _build_overview(db: sqlite3.Connection) -> None:
    """The coarse levels, sums and names in one row per bucket, in key order (level, lane, ...):
    every lane's whole-session summaries at one level are then one contiguous run of pages, where
    reading them from ``lod`` and ``lod_names`` alternates between two b-trees a row at a time.
    A level is in it when its buckets are at least 1 / :data:`OVERVIEW_BUCKETS` of the session,
    which covers every whole-session frame up to OVERVIEW_BUCKETS / 2 pixels wide."""
    first, last, levels = db.execute("SELECT min(first), max(last), (SELECT value FROM meta WHERE key = 'levels') "
                                     "FROM lanes").fetchone()
    levels = int(levels)
    span = (last - first) if first is not None else 0
    top = next((k for k in range(1, levels + 1) if level_width(k) * OVERVIEW_BUCKETS >= span), levels)
    db.execute(overview_statement(), (top,))
    db.execute("INSERT INTO meta VALUES ('overview_level', ?)", (str(top),))


def overview_statement() -> str:
    """The statement copying the levels from ``?`` up into ``overview`` (a search of both keys)."""
    return ('INSERT INTO overview SELECT d.level, d.lane, d.up, d.bucket, d.n, d.start, d."end", d.busy, '
            'g.longest, g.name FROM lod d JOIN lod_names g USING (level, lane, up, bucket) WHERE d.level >= ? '
            'ORDER BY d.level, d.lane, d.up, d.bucket')


def level_statements(level: int) -> tuple[str, str]:
    """The two statements writing summary level ``level``: its sums, then its longest slices' names.

    SQLite takes a bare column from the row of the max() only when the query has one min()/max(),
    so the names are a second pass into a table of their own (joined by key when read); a join
    here would look every slice's bucket up again. (lane, bucket) leads the slices' key and
    (level, lane, up = bucket / FACTOR) the summaries': each level is one pass over the one below
    in key order, with no sort."""
    if level == 1:
        return (f"INSERT INTO lod SELECT 1, lane, bucket / {FACTOR}, bucket, count(*), min(start), max(start + dur), "
                f"sum(dur) FROM slices GROUP BY lane, bucket",
                f"INSERT INTO lod_names SELECT 1, lane, bucket / {FACTOR}, bucket, max(dur), name FROM slices "
                f"GROUP BY lane, bucket")
    below = level - 1
    return (f'INSERT INTO lod SELECT {level}, lane, up / {FACTOR}, up, sum(n), min(start), max("end"), sum(busy) '
            f"FROM lod WHERE level = {below} GROUP BY lane, up",
            f"INSERT INTO lod_names SELECT {level}, lane, up / {FACTOR}, up, max(longest), name FROM lod_names "
            f"WHERE level = {below} GROUP BY lane, up")


def level_width(level: int) -> int:
    """The bucket width (ns) of summary level ``level`` (1 and up)."""
    return BASE_NS * FACTOR ** (level - 1)
