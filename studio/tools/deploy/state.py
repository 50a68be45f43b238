"""The last-synced state of a deployment: for each path, what both sides looked like after a sync.

It is the base that tells "changed here", "changed there" and "changed on both sides" apart
(a bare newer/older mtime test cannot). Kept per deployment in the user data folder as JSON,
written atomically. While a transfer runs, each file that lands is appended to a journal and
flushed, so a cancelled or cut run still records what it finished; the next load replays the
journal and :meth:`SyncState.save` folds it into the JSON.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from studio.targets.transfer.scan import FileInfo

VERSION = 1


@dataclass(frozen=True)
class Synced:
    """Both sides of one path as they were right after it was synced."""

    local: FileInfo
    remote: FileInfo
    sha256: str | None = None

    def to_list(self) -> list:
        out = [self.local.size, self.local.mtime, self.remote.size, self.remote.mtime, self.sha256]
        if self.local.mtime_ns is not None and self.local.ctime_ns is not None:
            out += [self.local.mtime_ns, self.local.ctime_ns]  # the local side's edit in the same second shows
        return out

    @classmethod
    def from_list(cls, v: list) -> Synced:
        local = FileInfo(int(v[0]), int(v[1]))
        if len(v) > 6 and isinstance(v[5], int) and isinstance(v[6], int):
            local = FileInfo(local.size, local.mtime, local.mode, v[5], v[6])
        return cls(local, FileInfo(int(v[2]), int(v[3])), v[4] if len(v) > 4 else None)


def state_dir() -> Path:
    from studio.core.paths import data_dir

    path = data_dir() / "deployments"
    path.mkdir(parents=True, exist_ok=True)
    return path


class SyncState:
    """The synced-state table of one deployment, bound to its host and both roots."""

    def __init__(self, name: str, identity: dict, folder: Path | None = None):
        self.name = name
        self.identity = identity  # host, local and remote roots: a state for other roots is not ours
        folder = folder or state_dir()
        self.path = folder / f"{name}.json"
        self.journal_path = folder / f"{name}.journal"
        self.files: dict[str, Synced] = {}
        # Tokens of runs that may have left temporary files: only names carrying one of these are
        # ever cleaned up (see scan.is_leftover); a run's token is dropped once it ended cleanly.
        self.tokens: set[str] = set()
        self._journal = None
        self._flushed = 0.0
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("version") == VERSION and data.get("identity") == self.identity:
                self.files = {p: Synced.from_list(v) for p, v in data.get("files", {}).items()}
                self.tokens = {str(t) for t in data.get("tokens", [])}
        except (OSError, ValueError, TypeError, IndexError, AttributeError):
            self.files = {}  # no state (or unreadable): every difference is treated as unknown history
        try:
            lines = self.journal_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        ours = True
        for line in lines:
            try:
                record = json.loads(line)
                if "identity" in record:  # a header: the records after it belong to these roots
                    ours = record["identity"] == self.identity
                    continue
                if not ours:
                    continue
                if "own" in record:
                    self.tokens.add(str(record["own"]))
                elif "done" in record:
                    self.tokens.discard(str(record["done"]))
                elif record.get("del"):
                    self.files.pop(record["p"], None)
                else:
                    self.files[record["p"]] = Synced.from_list(record["v"])
            except (ValueError, TypeError, KeyError, IndexError, AttributeError):
                continue  # a line cut by a crash: that one file is simply not recorded

    def own(self, token: str) -> None:
        """Record ``token`` as this deployment's BEFORE any temporary file carrying it is created."""
        self.tokens.add(token)
        self._write({"own": token})
        self._journal.flush()
        os.fsync(self._journal.fileno())

    def done(self, token: str) -> None:
        """The run with ``token`` left nothing behind (or its leftovers were removed)."""
        if token in self.tokens:
            self.tokens.discard(token)
            self._write({"done": token})

    def _write(self, line: dict) -> None:
        if self._journal is None:
            self._journal = open(self.journal_path, "a", encoding="utf-8", errors="surrogateescape")
            self._journal.write(json.dumps({"identity": self.identity}) + "\n")
        self._journal.write(json.dumps(line) + "\n")

    def record(self, path: str, synced: Synced | None) -> None:
        """Note one path as synced (or as gone from both sides when ``synced`` is None), durably."""
        if synced is None:
            self.files.pop(path, None)
            line = {"p": path, "del": True}
        else:
            self.files[path] = synced
            line = {"p": path, "v": synced.to_list()}
        self._write(line)
        # Flushed about once a second, not per file: a crash loses at most that second's records,
        # and the next scan finds those files equal on both sides and records them again.
        now = time.monotonic()
        if now - self._flushed > 1.0:
            self._journal.flush()
            self._flushed = now

    def save(self) -> None:
        """Write the whole table atomically and drop the journal."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        data = {"version": VERSION, "identity": self.identity, "tokens": sorted(self.tokens),
                "files": {p: s.to_list() for p, s in sorted(self.files.items())}}
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
                json.dump(data, handle, separators=(",", ":"))
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.journal_path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
