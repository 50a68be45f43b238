"""A workspace: a folder with a ``studio.toml`` holding its name, run configurations and recent artifacts.

The file is small and meant to be read and edited by people (and kept in version control).
Paths inside the workspace are stored relative to it, so a workspace can be moved or shared.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.core.errors import UserError
from studio.core.formats import WORKSPACE, FileFormat
from studio.core.toml_store import load_toml, save_toml

WORKSPACE_FILE_NAME = "studio.toml"
FORMAT_VERSION = 1
MAX_RECENT_ARTIFACTS = 50


@dataclass
class Artifact:
    """A file the workspace remembers: a model, a profile, a dump folder, a report."""

    path: Path
    kind: str
    opened: str = ""


@dataclass
class Workspace:
    """A workspace folder and its settings."""

    folder: Path
    data: dict[str, Any] = field(default_factory=dict)
    modified: bool = False
    """True when ``data`` changed since the last save (the file is only rewritten then, since
    rewriting drops the comments and layout of a hand-edited ``studio.toml``)."""

    @property
    def settings_path(self) -> Path:
        """The ``studio.toml`` file of this workspace."""
        return self.folder / WORKSPACE_FILE_NAME

    @property
    def name(self) -> str:
        """The display name (the folder's name unless set)."""
        return self.data.get("workspace", {}).get("name") or self.folder.name

    @classmethod
    def is_workspace(cls, folder: Path) -> bool:
        """True when ``folder`` holds a ``studio.toml``."""
        # lexists, not is_file: a studio.toml that is a FIFO or a folder is refused with a reason on open
        return os.path.lexists(Path(folder) / WORKSPACE_FILE_NAME)

    @classmethod
    def create(cls, folder: Path, name: str | None = None) -> Workspace:
        """Make ``folder`` a workspace (keeping an existing ``studio.toml``) and return it."""
        folder = Path(folder).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        if cls.is_workspace(folder):
            return cls.open(folder)
        workspace = cls(folder, {"workspace": {"name": name or folder.name, "format": FORMAT_VERSION}})
        workspace.save()
        return workspace

    @classmethod
    def open(cls, folder: Path) -> Workspace:
        """Open an existing workspace; a folder without ``studio.toml`` is a UserError."""
        folder = Path(folder).resolve()
        if not folder.is_dir():
            raise UserError("Workspace folder does not exist", folder, "Choose an existing folder or create a workspace there.")
        if not cls.is_workspace(folder):
            raise UserError(f"Not a Studio workspace (no {WORKSPACE_FILE_NAME})", folder,
                            "Use File > New Workspace, or `studio workspace init DIR`.")
        data = load_toml(folder / WORKSPACE_FILE_NAME)
        version = data.get("workspace", {}).get("format", FORMAT_VERSION)
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise UserError(f"Workspace format {version!r} is newer than this Studio understands ({FORMAT_VERSION})",
                            folder / WORKSPACE_FILE_NAME, "Update Studio to open this workspace.")
        return cls(folder, data)

    def save(self) -> None:
        """Write ``studio.toml`` atomically."""
        save_toml(self.settings_path, self.data)
        self.modified = False

    # ---- generic tables, used by the run configurations
    def table(self, name: str) -> list[dict[str, Any]]:
        """A list-of-tables section such as ``run`` (a copy)."""
        return [dict(item) for item in self.data.get(name, [])]

    def set_table(self, name: str, items: list[dict[str, Any]]) -> None:
        """Replace a list-of-tables section."""
        self.data[name] = [dict(item) for item in items]
        self.modified = True

    # ---- recent artifacts
    def relative(self, path: Path) -> str:
        """``path`` relative to the workspace when it lies inside, else absolute."""
        path = Path(path).resolve()
        try:
            return path.relative_to(self.folder).as_posix()
        except ValueError:
            return str(path)

    def resolve(self, stored: str) -> Path:
        """Turn a stored path back into an absolute one."""
        path = Path(stored)
        return path if path.is_absolute() else (self.folder / path).resolve()

    @property
    def recent_artifacts(self) -> list[Artifact]:
        """Artifacts opened in this workspace, newest first."""
        items = self.data.get("recent", {}).get("artifacts", [])
        return [Artifact(self.resolve(i["path"]), i.get("kind", ""), i.get("opened", "")) for i in items if "path" in i]

    def add_artifact(self, path: Path, kind: str) -> None:
        """Remember that ``path`` (of format ``kind``) was opened now."""
        stored = self.relative(path)
        items = [i for i in self.data.get("recent", {}).get("artifacts", []) if i.get("path") != stored]
        entry = {"path": stored, "kind": kind, "opened": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self.data.setdefault("recent", {})["artifacts"] = [entry, *items][:MAX_RECENT_ARTIFACTS]
        self.modified = True


def _open_workspace(path: Path, cancel=None) -> Workspace:
    return Workspace.open(path if path.is_dir() else path.parent)


WORKSPACE_FILE = FileFormat("workspace_file", "Studio workspace", WORKSPACE,
                            lambda path, head: path.name == WORKSPACE_FILE_NAME, _open_workspace)
WORKSPACE_DIR = FileFormat("workspace", "Studio workspace", WORKSPACE, lambda path: Workspace.is_workspace(path),
                           _open_workspace, folder=True)
