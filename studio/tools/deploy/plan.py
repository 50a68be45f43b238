"""The dry-run plan: for every path, what Upload, Download or Sync would do, and why.

Change detection compares each side with the last-synced state (size and whole-second mtime,
or SHA-256 when checksums were asked for). A path changed on both sides since the last sync is
a *conflict*: never overwritten until the user picks a side. Deletions are planned only when
asked for. Anything that would write outside the root — through a symlinked folder, over a
symlink, or from an unsafe name in a listing — is *refused* with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.targets.transfer.safe_paths import link_points_inside, parents
from studio.targets.transfer.scan import FileInfo, Scan
from studio.tools.deploy.state import Synced

UPLOAD, DOWNLOAD = "upload", "download"
DELETE_REMOTE, DELETE_LOCAL = "delete-remote", "delete-local"
CONFLICT, SKIP, REFUSE = "conflict", "skip", "refuse"
MODES = ("upload", "download", "sync")
CHOICES = ("local", "remote", "skip")


@dataclass
class PlanItem:
    """One row of the plan. ``choice`` settles a conflict: "local", "remote" or "skip"."""

    path: str
    action: str
    reason: str
    local: FileInfo | None = None
    remote: FileInfo | None = None
    choice: str | None = None
    # SHA-256 of each side's content as planned, where known (checksums, or unchanged since the last
    # sync): the write-time check compares it when the file's times cannot tell (see safe_paths)
    local_sha256: str | None = None
    remote_sha256: str | None = None

    @property
    def size(self) -> int:
        """Bytes that would move (0 for deletions and skips)."""
        action = self.effective_action()
        if action == UPLOAD and self.local:
            return self.local.size
        if action == DOWNLOAD and self.remote:
            return self.remote.size
        if action == CONFLICT:
            return max((self.local.size if self.local else 0), (self.remote.size if self.remote else 0))
        return 0

    def effective_action(self, allow_delete: bool = True) -> str:
        """The action after the user's choice (a conflict with no choice stays a conflict)."""
        if self.action != CONFLICT or self.choice is None:
            return self.action
        if self.choice == "local":
            return UPLOAD if self.local else (DELETE_REMOTE if allow_delete else SKIP)
        if self.choice == "remote":
            return DOWNLOAD if self.remote else (DELETE_LOCAL if allow_delete else SKIP)
        return SKIP

    def __json__(self) -> dict:
        """A row of the plan in ``--json`` (:func:`studio.core.serial.to_json`): each side as [size, mtime]."""
        return {"path": self.path, "action": self.action, "effective": self.effective_action(),
                "reason": self.reason, "size": self.size, "choice": self.choice,
                "local": None if self.local is None else [self.local.size, self.local.mtime],
                "remote": None if self.remote is None else [self.remote.size, self.remote.mtime]}


@dataclass
class Plan:
    """What an action would do; ``apply`` in sync.py carries it out."""

    mode: str
    items: list[PlanItem]
    local: Scan
    remote: Scan
    delete: bool = False
    unchanged: int = 0
    records: dict[str, Synced | None] = field(default_factory=dict)  # state to refresh (no transfer)
    notes: list[str] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)  # path -> sha256 where both sides agreed

    def counts(self) -> dict[str, int]:
        """How many rows of each effective action, plus the unchanged files."""
        out = {a: 0 for a in (UPLOAD, DOWNLOAD, DELETE_REMOTE, DELETE_LOCAL, CONFLICT, SKIP, REFUSE)}
        for item in self.items:
            out[item.effective_action(self.delete)] += 1
        out["unchanged"] = self.unchanged
        return out

    @property
    def conflicts(self) -> list[PlanItem]:
        return [i for i in self.items if i.effective_action(self.delete) == CONFLICT]

    def resolve(self, prefer: str | None) -> None:
        """Settle every open conflict in favour of one side ("local" or "remote")."""
        if prefer:
            for item in self.items:
                if item.action == CONFLICT and item.choice is None:
                    item.choice = prefer

    def summary(self) -> str:
        """One line with the non-zero counts, e.g. "3 to upload, 1 conflict, 120 unchanged"."""
        c = self.counts()
        parts = [f"{c[UPLOAD]} to upload", f"{c[DOWNLOAD]} to download", f"{c[DELETE_REMOTE]} to delete on remote",
                 f"{c[DELETE_LOCAL]} to delete locally", f"{c[CONFLICT]} conflict" + ("s" if c[CONFLICT] != 1 else ""),
                 f"{c[REFUSE]} refused", f"{c[SKIP]} skipped"]
        shown = [p for p in parts if not p.startswith("0 ")]
        return ", ".join(shown + [f"{c['unchanged']} unchanged"]) if shown else \
            f"nothing to do, {c['unchanged']} unchanged"


def _changed(now: FileInfo | None, base: FileInfo | None, now_hash: str | None, base_hash: str | None) -> bool:
    if now is None:
        return base is not None
    if base is None:
        return True
    if now_hash and base_hash:
        return now_hash != base_hash
    return not now.same_stat(base)


def _equal(loc: FileInfo | None, rem: FileInfo | None, lh: str | None, rh: str | None) -> bool:
    if loc is None or rem is None or loc.size != rem.size:
        return False
    if lh and rh:
        return lh == rh
    return loc.mtime == rem.mtime


def _decide(mode: str, path: str, loc, rem, base: Synced | None, lc: bool, rc: bool, delete: bool
            ) -> tuple[str, str]:
    """(action, reason) for a path whose two sides differ."""
    never = base is None
    if loc is not None and rem is not None:
        if lc and rc:
            why = "exists on both sides with different content and was never synced" if never \
                else "changed on both sides since the last sync"
            return CONFLICT, why
        if mode == "upload":
            return (CONFLICT, "changed on remote since the last sync; uploading would overwrite it") if rc \
                else (UPLOAD, "changed locally")
        if mode == "download":
            return (CONFLICT, "changed locally since the last sync; downloading would overwrite it") if lc \
                else (DOWNLOAD, "changed on remote")
        if lc:
            return UPLOAD, "changed locally"
        if rc:
            return DOWNLOAD, "changed on remote"
        return CONFLICT, "the two sides differ and the last sync cannot tell which is newer"
    if loc is not None:  # missing on remote
        if mode == "upload" or (mode == "sync" and never):
            return UPLOAD, "new locally" if never else "missing on remote"
        if mode == "sync" and lc:
            return CONFLICT, "changed locally, deleted on remote"
        if not delete:
            return SKIP, ("deleted on remote" if not never else "only local") + "; pass --delete to delete it locally"
        if mode == "download" and lc and not never:  # the mirror of upload's rule below: never delete an edit
            return CONFLICT, "deleted on remote, changed locally"
        return DELETE_LOCAL, "deleted on remote" if not never else "only local"
    # missing locally
    if mode == "download" or (mode == "sync" and never):
        return DOWNLOAD, "new on remote" if never else "missing locally"
    if mode == "sync" and rc:
        return CONFLICT, "changed on remote, deleted locally"
    if not delete:
        return SKIP, ("deleted locally" if not never else "only on remote") + "; pass --delete to delete it on remote"
    if mode == "upload" and rc and not never:
        return CONFLICT, "deleted locally, changed on remote"
    return DELETE_REMOTE, "deleted locally" if not never else "only on remote"


NAME_MAX = 255  # bytes per path component on Linux file systems (ext4, xfs, btrfs, overlayfs)


def _refusal(path: str, action: str, local: Scan, remote: Scan) -> str | None:
    """Why writing ``path`` on the side ``action`` writes to would be unsafe, or None."""
    writes_remote = action in (UPLOAD, DELETE_REMOTE, CONFLICT)
    writes_local = action in (DOWNLOAD, DELETE_LOCAL, CONFLICT)
    for side, scan, writes in (("remote", remote, writes_remote), ("local", local, writes_local)):
        if not writes:
            continue
        long = next((part for part in path.split("/") if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX), None)
        if long is not None:  # e.g. from a Mac, where a name may have 255 characters, not bytes
            return (f"the name {long[:40]}… is {len(long.encode('utf-8', 'surrogateescape'))} bytes long; the "
                    f"{side} file system stores at most {NAME_MAX} bytes per name")
        for folder in parents(path):
            if folder in scan.links:
                return f"the {side} folder {folder!r} is a symlink (-> {scan.links[folder]}); Studio never writes through symlinks"
        if path in scan.links:
            return f"the {side} path is a symlink (-> {scan.links[path]}); Studio does not replace symlinks"
        if path in scan.dirs:
            return f"the {side} path is a folder"
    return None


def make_plan(mode: str, local: Scan, remote: Scan, synced: dict[str, Synced], delete: bool = False,
              local_hashes: dict[str, str] | None = None, remote_hashes: dict[str, str] | None = None) -> Plan:
    """Compare both scans with the last-synced state and decide every path (pure; no I/O)."""
    if mode not in MODES:
        raise ValueError(mode)
    lh_all, rh_all = local_hashes or {}, remote_hashes or {}
    plan = Plan(mode, [], local, remote, delete=delete)
    if delete and (local.errors or remote.errors):
        plan.delete = delete = False
        plan.notes.append("Deletions are off for this run: some files could not be listed "
                          f"({(local.errors + remote.errors)[0]}).")
    for side, scan in (("local", local), ("remote", remote)):
        for path, target in sorted(scan.links.items()):
            if link_points_inside(path, target):
                plan.items.append(PlanItem(path, SKIP, f"{side} symlink (-> {target}); symlinks are not synced"))
            else:
                plan.items.append(PlanItem(path, REFUSE, f"{side} symlink points outside the deployment root "
                                                         f"(-> {target}); Studio never follows it"))
        for path, why in sorted(scan.refused.items()):
            plan.items.append(PlanItem(path, REFUSE, why))
    ruled = {item.path for item in plan.items}  # a symlink on one side and a file on the other: one row
    for path in sorted(set(local.files) | set(remote.files) | set(synced)):
        if path in ruled:
            continue
        loc, rem, base = local.files.get(path), remote.files.get(path), synced.get(path)
        lh, rh = lh_all.get(path), rh_all.get(path)
        if loc is None and rem is None:
            if path not in local.links and path not in remote.links:
                plan.records[path] = None  # gone from both sides: forget it
            continue
        # Size and whole second alike on both sides say nothing of a local edit within the second
        # of the last sync (or one that put the mtime back): the nanoseconds and ctime kept then do.
        edited_within_second = (base is not None and loc is not None and base.local.ctime_ns is not None
                                and loc.size == base.local.size and loc.mtime == base.local.mtime
                                and not loc.same_stat(base.local))
        if _equal(loc, rem, lh, rh) and not (edited_within_second and not (lh and rh)):
            plan.unchanged += 1
            digest = lh if lh and lh == rh else (base.sha256 if base else None)
            if lh and lh == rh:
                plan.hashes[path] = lh
            if base is None or not (loc.same_stat(base.local) and rem.same_stat(base.remote)) \
                    or (digest and digest != base.sha256):
                plan.records[path] = Synced(loc, rem, digest)
            continue
        base_hash = base.sha256 if base else None
        lc = _changed(loc, base.local if base else None, lh, base_hash)
        rc = _changed(rem, base.remote if base else None, rh, base_hash)
        action, reason = _decide(mode, path, loc, rem, base, lc, rc, delete)
        refused = _refusal(path, action, local, remote) if action != SKIP else None
        if refused:
            action, reason = REFUSE, refused
        plan.items.append(PlanItem(path, action, reason, loc, rem,
                                   local_sha256=lh or (base_hash if loc and not lc else None),
                                   remote_sha256=rh or (base_hash if rem and not rc else None)))
    order = {REFUSE: 0, CONFLICT: 1, DELETE_REMOTE: 2, DELETE_LOCAL: 3, UPLOAD: 4, DOWNLOAD: 5, SKIP: 6}
    plan.items.sort(key=lambda i: (order[i.action], i.path))
    return plan
