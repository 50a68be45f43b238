"""Deployment jobs: status, plan (dry run), apply, compare — the engine the CLI and panel drive.

Every job takes its connection from a connector — the host's pooled connection in the window and
the CLI (jobs for one host run one at a time in the GUI) — scans both sides, and works from a :class:`~studio.tools.deploy.plan.Plan`. Applying updates the synced
state per file as it lands, so a cancelled or cut run resumes where it stopped.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from contextlib import contextmanager
from pathlib import Path

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, Progress
from studio.targets.transfer import remote_ops
from studio.tools.deploy.deployments import Deployment
from studio.targets.transfer.download import Downloader, open_download_stream
from studio.targets.transfer.ignore import Excludes
from studio.tools.deploy.plan import (CONFLICT, DELETE_LOCAL, DELETE_REMOTE, DOWNLOAD, REFUSE, UPLOAD, Plan,
                                      make_plan)
from studio.targets.transfer.resume import adopt_local_parts, adopt_parts, resumable_parts
from studio.targets.transfer.safe_paths import (LocalRootGuard, WriteRefused, check_relative, local_problem,
                                                local_root_problem, open_local_folder)
from studio.targets.transfer.scan import Scan, hash_local, hash_remote, scan_local, scan_remote
from studio.targets.files import new_token
from studio.tools.deploy.state import SyncState, Synced
from studio.targets.transfer.common import (MIN_BATCH, SMALL_FILE, STREAM_FILE, Landed, connection_lost,
                                            TransferStats, is_connection_error)
from studio.targets.transfer.upload import Uploader, open_batch_stream
from studio.core.units import human_size

Connector = Callable[[], object]  # returns an open SshConnection


def host_connector(context, deployment: Deployment) -> Connector:
    """Connect through ``context`` (a :class:`~studio.remote.context.HostContext`): the host's pooled
    connection, checked against the context's known hosts."""
    return lambda: context.connection(deployment.host)


CANCEL_GRACE_S = 1.0  # a cancelled job gets this long to stop by itself (and remove its temporary files)


@contextmanager
def closing_on_cancel(conn, cancel: CancelToken | None):
    """While inside: a cancel not honoured within CANCEL_GRACE_S (a read or write blocked on a silent
    host) closes ``conn``, so the blocked call returns; what it raises then is reported as the
    cancel it is."""
    if cancel is None:
        yield
        return
    timer = threading.Timer(CANCEL_GRACE_S, conn.close)
    timer.daemon = True
    unhook = cancel.on_cancel(timer.start)
    try:
        yield
    except Exception as exc:
        if cancel.cancelled and not isinstance(exc, Cancelled):
            raise Cancelled() from exc
        raise
    finally:
        unhook()
        timer.cancel()


def release(conn, failed: bool = False) -> None:
    """Done with ``conn``: a pooled connection stays open for the next job unless this one failed
    (a cancelled ``find`` or a half-sent stream must not outlive the job); any other closes."""
    if failed or not getattr(conn, "pooled", False):
        conn.close()


def _too_wide(real: str, home: str, side: str) -> str | None:
    real, home = real.rstrip("/") or "/", home.rstrip("/") or "/"
    if real == "/":
        return f"the whole {side} root folder"
    if real == home:
        return f"the whole {side} home folder ({home})"
    if home.startswith(real + "/"):
        return f"a folder above the {side} home folder ({real})"
    return None


def guard_remote_root(conn, deployment: Deployment) -> bool:
    """Refuse a remote root that IS the home or root folder, or above them, once the host resolved it.

    The lexical check (``deployments.remote_too_wide``) cannot see ``/home/me`` written out or a
    symlink to ``/``; this asks the host (SFTP realpath: no shell, two round trips). Returns False
    when the host said the folder does not exist (so there is nothing to list).
    """
    from studio.tools.deploy.deployments import normalise_remote

    sftp = conn.sftp()
    home = sftp.normalize(".")
    path, relative = normalise_remote(deployment.remote)
    try:
        real = sftp.normalize(path if not relative else home if path == "." else f"{home}/{path}")
    except FileNotFoundError:  # not there yet (an upload creates it)
        return False
    except (OSError, UnicodeError):  # a name realpath cannot give, no permission: the listing says more
        return True
    problem = _too_wide(real, home, "remote")
    if problem:
        raise UserError(f"Deployment {deployment.name!r} would sync {problem}: {deployment.remote!r} is {real} on "
                        f"{deployment.host}", deployment.name,
                        f"Point it at a project folder: `studio deploy add {deployment.name} --host {deployment.host} "
                        f"--local {deployment.local} --remote /path/to/project`.")
    try:
        sftp.stat(real)  # realpath accepts a missing last name
    except FileNotFoundError:
        return False
    except (OSError, UnicodeError):
        pass
    return True


def guard_local_root(deployment: Deployment) -> None:
    """Refuse a local root that is this computer's home or root folder, or above them."""
    problem = _too_wide(os.path.realpath(deployment.local_root), os.path.realpath(Path.home()), "local")
    if problem:
        raise UserError(f"Deployment {deployment.name!r} would sync {problem}", deployment.local,
                        "Point it at a project folder.")


def state_for(deployment: Deployment) -> SyncState:
    identity = {"host": deployment.host, "local": str(deployment.local_root.resolve()), "remote": deployment.remote}
    return SyncState(deployment.name, identity)


def _read_state(deployment: Deployment) -> SyncState:
    state = state_for(deployment)
    state.close()
    return state


def _connect_and_scan(deployment: Deployment, connector: Connector, cancel: CancelToken | None, owned: frozenset,
                      overlap: Callable | None = None) -> Generator[Progress, None, tuple]:
    """Connect and run the remote ``find`` on a thread while the local folder is walked here.

    Returns ``(conn, local scan, remote scan, extra)``; the caller closes ``conn``. While the
    remote listing still runs, ``overlap(conn, local_scan)`` may start a command whose start-up
    should overlap it; ``extra`` is what it returned (None when the listing was done first). It
    starts once the host has the listing command: commands started together wait for each other's
    shell start-up on some hosts (a pyenv set-up locks its rehash), and the listing comes first.
    """
    excludes = Excludes(deployment.excludes)
    box: dict = {}
    lock = threading.Lock()

    def remote_side() -> None:
        try:
            conn = connector()
            with lock:
                if box.get("abandoned"):  # the job was cancelled meanwhile: nobody will close it
                    conn.close()
                    return
                box["conn"] = conn
            # As the host resolves it: no home, no / (nor above). A root the host does not have is not
            # listed: a `find` would only pay the login shell's start-up for nothing.
            if guard_remote_root(conn, deployment):
                box["scan"] = scan_remote(conn, deployment.remote, excludes, owned,
                                          started=lambda: box.setdefault("listing", True))
            else:
                box["listing"] = True
                box["scan"] = Scan(deployment.remote, exists=False)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the job's thread
            box["error"] = exc

    guard_local_root(deployment)
    worker = threading.Thread(target=remote_side, name="deploy-remote-scan", daemon=True)
    worker.start()
    try:
        yield Progress(None, f"connecting to {deployment.host}, listing {deployment.local}")
        local = scan_local(deployment.local_root, excludes, cancel, owned)
        while worker.is_alive():
            with lock:
                conn = box.get("conn")
            if overlap is not None and conn is not None and "listing" in box and "extra" not in box:
                box["extra"] = overlap(conn, local)
            worker.join(0.02)
            if cancel is not None:
                cancel.raise_if_cancelled()
            yield Progress(None, f"listing {deployment.host}:{deployment.remote}")
    except BaseException:
        with lock:
            box["abandoned"] = True
            conn = box.get("conn")
        if conn is not None:
            conn.close()  # also ends a `find` still running on the thread
        raise
    conn = box.get("conn")
    if "error" in box:
        if conn is not None:
            conn.close()
        exc = box["error"]
        if conn is None or isinstance(exc, UserError) or not is_connection_error(exc):
            raise exc
        raise connection_lost(conn, exc) from exc
    if overlap is not None and "extra" not in box:  # SFTP answered before the listing command started
        try:
            box["extra"] = overlap(conn, local)
        except BaseException:
            conn.close()
            raise
    return conn, local, box["scan"], box.get("extra")


def plan_job(deployment: Deployment, mode: str, connector: Connector, delete: bool = False, checksum: bool = False,
             cancel: CancelToken | None = None) -> Generator[Progress, None, Plan]:
    """Scan both sides and return the dry-run plan (nothing is changed)."""
    state = _read_state(deployment)
    conn, local, remote, _ = yield from _connect_and_scan(deployment, connector, cancel, frozenset(state.tokens))
    failed = True
    try:
        with closing_on_cancel(conn, cancel):
            plan = yield from _plan_from(conn, deployment, mode, local, remote, delete, checksum, cancel, state=state)
        failed = False
        return plan
    finally:
        release(conn, failed)


def _plan_from(conn, deployment: Deployment, mode: str, local: Scan, remote: Scan, delete: bool, checksum: bool,
               cancel: CancelToken | None, keep: str | None = None, state: SyncState | None = None
               ) -> Generator[Progress, None, Plan]:
    if keep:  # this run's own staging folder is not a leftover of an earlier one
        remote.leftovers = [p for p in remote.leftovers if keep not in p]
    state = state or _read_state(deployment)
    local_hashes = remote_hashes = None
    if checksum:
        both = [p for p, info in local.files.items() if p in remote.files and remote.files[p].size == info.size]
        local_hashes = yield from hash_local(deployment.local_root, both, cancel)
        yield Progress(None, f"checksums of {len(both)} remote files")
        remote_hashes = hash_remote(conn, remote.root, both) if remote.exists else {}
    plan = make_plan(mode, local, remote, state.files, delete, local_hashes, remote_hashes)
    yield from _hash_conflicts(conn, deployment, plan, remote, cancel)
    yield Progress(1.0, plan.summary())
    return plan


def _hash_conflicts(conn, deployment: Deployment, plan: Plan, remote: Scan, cancel: CancelToken | None):
    """A conflict settled later ("keep local", "keep remote") overwrites the version the plan saw, never
    a later edit: where a side's listing gives whole seconds only (no ctime), the content's SHA-256
    taken now is what the last check before the write compares with."""
    open_items = [i for i in plan.items if i.action == CONFLICT]
    remote_paths = [i.path for i in open_items if i.remote is not None and i.remote.ctime_ns is None
                    and not i.remote_sha256]
    local_paths = [i.path for i in open_items if i.local is not None and i.local.ctime_ns is None
                   and not i.local_sha256]
    if not remote_paths and not local_paths:
        return
    yield Progress(None, f"checksums of {len(open_items)} conflicting files")
    remote_hashes = hash_remote(conn, remote.root, remote_paths) if remote_paths and remote.exists else {}
    local_hashes = (yield from hash_local(deployment.local_root, local_paths, cancel)) if local_paths else {}
    for item in open_items:
        item.remote_sha256 = item.remote_sha256 or remote_hashes.get(item.path)
        item.local_sha256 = item.local_sha256 or local_hashes.get(item.path)


@dataclass
class ApplyResult:
    """What an apply did."""

    uploaded: int = 0
    downloaded: int = 0
    deleted_remote: int = 0
    deleted_local: int = 0
    bytes: int = 0
    seconds: float = 0.0
    failed: list[tuple[str, str]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.failed or self.conflicts or self.refused)

    def add_transfer(self, stats: TransferStats) -> int:
        """Count an upload's or a download's bytes and problems in; returns how many files it moved."""
        self.bytes += stats.bytes
        self.failed += stats.failed
        self.refused += stats.refused
        self.conflicts += [path for path, _ in stats.conflicts]
        return stats.files

    def summary(self) -> str:
        text = (f"{self.uploaded} uploaded, {self.downloaded} downloaded, {self.deleted_remote} deleted on remote, "
                f"{self.deleted_local} deleted locally ({human_size(self.bytes)} in {self.seconds:.1f} s)")
        if self.conflicts:
            text += f"; {len(self.conflicts)} conflicts left untouched"
        if self.refused:
            text += f"; {len(self.refused)} refused"
        if self.failed:
            text += f"; {len(self.failed)} failed"
        return text

    def __json__(self) -> dict:
        """The ``--json`` form (:func:`studio.core.serial.to_json`): failures and refusals as objects."""
        return {"uploaded": self.uploaded, "downloaded": self.downloaded, "deleted_remote": self.deleted_remote,
                "deleted_local": self.deleted_local, "bytes": self.bytes, "seconds": round(self.seconds, 3),
                "failed": [{"path": p, "error": e} for p, e in self.failed], "conflicts": self.conflicts,
                "refused": [{"path": p, "reason": r} for p, r in self.refused]}

    @classmethod
    def __from_json__(cls, data: dict) -> ApplyResult:
        return cls(data["uploaded"], data["downloaded"], data["deleted_remote"], data["deleted_local"], data["bytes"],
                   data["seconds"], [(f["path"], f["error"]) for f in data["failed"]], list(data["conflicts"]),
                   [(f["path"], f["reason"]) for f in data["refused"]])


def apply_job(deployment: Deployment, plan: Plan, connector: Connector, cancel: CancelToken | None = None
              ) -> Generator[Progress, None, ApplyResult]:
    """Carry out ``plan`` (conflicts only where a choice was made)."""
    yield Progress(None, f"connecting to {deployment.host}")
    conn = connector()
    failed = True
    try:
        with closing_on_cancel(conn, cancel):
            result = yield from _apply_with(conn, deployment, plan, cancel)
        failed = False
        return result
    finally:
        release(conn, failed)


def run_job(deployment: Deployment, mode: str, connector: Connector, delete: bool = False, checksum: bool = False,
            prefer: str | None = None, cancel: CancelToken | None = None, on_plan: Callable[[Plan], None] | None = None
            ) -> Generator[Progress, None, tuple[Plan, ApplyResult]]:
    """Plan and apply on one connection (the CLI's upload/download/sync)."""
    token = new_token()
    state = _read_state(deployment)

    def start_batch_command(conn, local):
        # Every remote command pays the login shell's start-up; when a tar batch is likely (enough
        # small local files), start its command now so that cost overlaps the listing. Unused,
        # it exits without touching anything.
        if mode == "download":  # its tar reads the names when the plan is made (see open_download_stream)
            return open_download_stream(conn, deployment.remote)
        small = sum(1 for info in local.files.values() if info.size <= SMALL_FILE)
        return open_batch_stream(conn, deployment.remote, token) if small >= MIN_BATCH else None

    conn, local, remote, spare = yield from _connect_and_scan(deployment, connector, cancel, frozenset(state.tokens),
                                                              start_batch_command)
    failed = True
    try:
        with closing_on_cancel(conn, cancel):
            plan = yield from _plan_from(conn, deployment, mode, local, remote, delete, checksum, cancel, keep=token,
                                         state=state)
            plan.resolve(prefer)
            if on_plan is not None:
                on_plan(plan)
            result = yield from _apply_with(conn, deployment, plan, cancel, token=token, spare=spare)
        failed = False
        return plan, result
    finally:
        if spare is not None:
            spare.close()
        release(conn, failed)


def _remove_local_leftovers(root: Path, paths: list[str], real: str | None) -> None:
    """Delete the temporary download files an interrupted run of ours left (their token is ours),
    each by name in its folder's directory handle (never through, nor of, a symlink)."""
    guard = LocalRootGuard(root, real)
    if guard.problem():
        return  # the root is not the folder that was scanned: leave it alone
    for path in paths:
        check_relative(path)
        folder, _, name = path.rpartition("/")
        try:
            where = open_local_folder(guard, folder)
        except (UserError, OSError):
            continue
        try:
            if not stat.S_ISLNK(os.lstat(name, dir_fd=where).st_mode):
                os.unlink(name, dir_fd=where)
        except OSError:
            pass
        finally:
            os.close(where)


def _delete_local(guard: LocalRootGuard, item) -> str | None:
    """Delete ``item``'s local file by name in its folder's directory handle; None when deleted,
    else "refused: WHY" or "changed" (edited since the plan: kept)."""
    path = item.path
    folder, _, name = path.rpartition("/")
    try:
        where = open_local_folder(guard, folder)
    except UserError as exc:
        return f"refused: {exc.what}"
    except FileNotFoundError:
        return None  # its folder is gone: so is the file
    except OSError as exc:
        return f"refused: {exc.strerror or exc}"
    try:
        try:
            if stat.S_ISLNK(os.lstat(name, dir_fd=where).st_mode):
                return "refused: it is a symlink now"
        except FileNotFoundError:
            return None
        if local_problem(name, item.local, item.local_sha256, dir_fd=where):  # edited since the plan
            return "changed"
        os.unlink(name, dir_fd=where)
        return None
    finally:
        os.close(where)


def _apply_with(conn, deployment: Deployment, plan: Plan, cancel: CancelToken | None, token: str | None = None,
                spare=None) -> Generator[Progress, None, ApplyResult]:
    started = time.monotonic()
    result = ApplyResult()
    groups: dict[str, list] = {UPLOAD: [], DOWNLOAD: [], DELETE_REMOTE: [], DELETE_LOCAL: []}
    for item in plan.items:
        action = item.effective_action(plan.delete)
        if action in groups:
            groups[action].append(item)
        elif action == CONFLICT:
            result.conflicts.append(item.path)
        elif action == REFUSE:
            result.refused.append((item.path, item.reason))
    state = state_for(deployment)
    try:
        for path, synced in plan.records.items():
            state.record(path, synced)
        remote_root = plan.remote.root if plan.remote.exists else None
        # A big upload a cut stopped half-way goes on from where it was (see resume.py).
        parts = resumable_parts(groups[UPLOAD], plan.remote.leftovers, state.tokens) if remote_root else {}
        leftovers = [p for p in plan.remote.leftovers if p not in set(parts.values())]
        if remote_root and leftovers:
            yield Progress(None, "removing temporary files of an interrupted run")
            try:
                remote_ops.remove_leftovers(conn, remote_root, leftovers)
            except WriteRefused:
                pass  # the root is not the folder that was scanned: its writes are refused one by one below
        local_parts = resumable_parts(groups[DOWNLOAD], plan.local.leftovers, state.tokens, STREAM_FILE, "remote")
        if local_root_problem(deployment.local_root, plan.local.real):
            local_parts = {}  # the root is not the folder that was scanned: nothing is renamed there
        _remove_local_leftovers(deployment.local_root, [p for p in plan.local.leftovers
                                                        if p not in set(local_parts.values())], plan.local.real)
        token = token or new_token()
        if groups[UPLOAD] or groups[DOWNLOAD]:
            state.own(token)  # durably ours before the first temporary name carrying it exists
        partial = adopt_parts(conn, remote_root, parts, token) if parts else {}
        local_partial = adopt_local_parts(deployment.local_root, local_parts, token) if local_parts else {}
        for old in list(state.tokens - {token}):  # what those runs left is gone now, or this run's
            state.done(old)

        def landed(value: Landed) -> None:
            state.record(value.path, Synced(value.local, value.remote, value.sha256 or plan.hashes.get(value.path)))

        if groups[DELETE_REMOTE] and remote_root:
            paths = [check_relative(i.path) for i in groups[DELETE_REMOTE]]
            yield Progress(None, f"deleting {len(paths)} files on {deployment.host}")
            try:
                kept = set(remote_ops.delete_files(conn, remote_root, paths,
                                                   {i.path: i.remote for i in groups[DELETE_REMOTE]},
                                                   {i.path: i.remote_sha256 for i in groups[DELETE_REMOTE]}))
            except WriteRefused as exc:
                result.refused += [(path, exc.what) for path in paths]
                kept = set(paths)
                paths = []
            for path in paths:
                if path not in kept:
                    state.record(path, None)
            result.deleted_remote = len(paths) - len(kept & set(paths))
            result.conflicts += sorted(kept & set(paths))  # changed on the host since the plan: kept
        root_problem = local_root_problem(deployment.local_root, plan.local.real) if plan.local.exists else None
        guard = LocalRootGuard(deployment.local_root, plan.local.real)
        for item in groups[DELETE_LOCAL]:
            path = check_relative(item.path)
            if root_problem:
                result.refused.append((path, root_problem))
                continue
            outcome = _delete_local(guard, item)
            if outcome == "changed":
                result.conflicts.append(path)
                continue
            if outcome is not None:
                result.refused.append((path, outcome.removeprefix("refused: ")))
                continue
            state.record(path, None)
            result.deleted_local += 1
        if groups[UPLOAD]:
            uploader = Uploader(conn, deployment.local_root, deployment.remote, remote_root, plan.remote.dirs, cancel,
                                token, spare)
            uploader.partial = partial
            stats = yield from uploader.run(groups[UPLOAD], landed)
            result.uploaded = result.add_transfer(stats)
        if groups[DOWNLOAD]:
            deployment.local_root.mkdir(parents=True, exist_ok=True)
            downloader = Downloader(conn, deployment.local_root, plan.remote.root, cancel, token,
                                    spare if plan.mode == "download" else None,
                                    real_root=plan.local.real if plan.local.exists else None)
            downloader.partial = local_partial
            stats = yield from downloader.run(groups[DOWNLOAD], landed)
            result.downloaded = result.add_transfer(stats)
        state.done(token)  # every temporary file of this run was renamed or removed
    finally:
        state.save()  # what landed is recorded even when cancelled or cut
    result.seconds = time.monotonic() - started
    yield Progress(1.0, result.summary())
    return result


@dataclass
class Status:
    """A deployment's state at a glance: the sync plan's counts, without changing anything."""

    plan: Plan
    seconds: float

    def __json__(self) -> dict:
        """``studio deploy status --json`` (:func:`studio.core.serial.to_json`): the plan's counts and rows."""
        c = self.plan.counts()
        return {"local_files": len(self.plan.local.files), "remote_files": len(self.plan.remote.files),
                "remote_exists": self.plan.remote.exists, "unchanged": c["unchanged"],
                "to_upload": c[UPLOAD], "to_download": c[DOWNLOAD], "conflicts": c[CONFLICT],
                "refused": c["refuse"], "skipped": c["skip"], "seconds": round(self.seconds, 3),
                "items": self.plan.items}


def status_job(deployment: Deployment, connector: Connector, cancel: CancelToken | None = None
               ) -> Generator[Progress, None, Status]:
    """What a two-way sync would do now (a dry run of ``sync``)."""
    started = time.monotonic()
    plan = yield from plan_job(deployment, "sync", connector, cancel=cancel)
    return Status(plan, time.monotonic() - started)


def text_diff(deployment: Deployment, path: str, connector: Connector, cancel: CancelToken | None = None,
              limit: int = 2 * 1024 * 1024) -> Generator[Progress, None, str]:
    """A unified diff of the local and remote copies of one text file ("" when identical)."""
    import difflib

    check_relative(path)
    local_path = deployment.local_root / path
    local = local_path.read_bytes()[: limit + 1] if local_path.is_file() else b""
    yield Progress(None, f"reading {deployment.host}:{path}")
    conn = connector()
    try:
        remote_root = remote_ops.prepare_root(conn, deployment.remote, create=False)
        status, remote = 1, b""
        if remote_root:
            status, remote, _ = remote_ops.run_bytes(conn, b"head -c " + str(limit + 1).encode() + b" -- " +
                                                     remote_ops.q(f"{remote_root}/{path}"))
        if status != 0:
            remote = b""
    except BaseException:
        release(conn, True)
        raise
    release(conn)
    if len(local) > limit or len(remote) > limit:
        return f"{path}: larger than {limit // (1024 * 1024)} MB, no text diff\n"
    if b"\0" in local[:8192] or b"\0" in remote[:8192]:
        return "" if local == remote else f"Binary files local/{path} and remote/{path} differ\n"
    lines = difflib.unified_diff(local.decode("utf-8", "replace").splitlines(keepends=True),
                                 remote.decode("utf-8", "replace").splitlines(keepends=True),
                                 f"local/{path}", f"remote/{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
