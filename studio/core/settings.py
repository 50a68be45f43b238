"""Per-user settings: recent files, the last workspace, preferences.

Stored as ``settings.toml`` in the user config folder (``STUDIO_HOME/config`` when set). A
broken file is moved aside and reported, never overwritten, and Studio starts with defaults.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.core.errors import UserError
from studio.core.paths import config_dir
from studio.core.toml_store import load_toml, quarantine, save_toml

log = logging.getLogger(__name__)

SETTINGS_FILE_NAME = "settings.toml"
MAX_RECENT_FILES = 12


@dataclass
class UserSettings:
    """The user's settings, loaded from and saved to one TOML file."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    load_problem: UserError | None = None
    """Set when the file on disk was broken and moved aside; the UI shows it once."""

    @classmethod
    def load(cls, path: Path | None = None) -> UserSettings:
        """Load the settings (defaults when the file is missing or broken)."""
        path = path or config_dir() / SETTINGS_FILE_NAME
        try:
            return cls(path, load_toml(path))
        except UserError as problem:
            moved = quarantine(path)
            log.warning("settings file %s was broken, moved to %s: %s", path, moved, problem)
            problem = UserError(problem.what, path, f"Starting with default settings; the old file was kept as {moved}.")
            return cls(path, {}, load_problem=problem)

    def save(self) -> None:
        """Write the settings to disk atomically."""
        save_toml(self.path, self.data)

    # ---- recent files
    @property
    def recent_files(self) -> list[Path]:
        """Recently opened files, newest first (only those that still exist)."""
        return [Path(p) for p in self.data.get("recent_files", []) if Path(p).exists()]

    def add_recent_file(self, path: Path) -> None:
        """Put ``path`` at the top of the recent files list."""
        text = str(Path(path).resolve())
        items = [p for p in self.data.get("recent_files", []) if p != text]
        self.data["recent_files"] = [text, *items][:MAX_RECENT_FILES]

    def clear_recent_files(self) -> None:
        """Forget all recent files."""
        self.data["recent_files"] = []

    # ---- workspace
    @property
    def last_workspace(self) -> Path | None:
        """The workspace folder that was open when Studio last closed."""
        value = self.data.get("last_workspace")
        return Path(value) if value else None

    @last_workspace.setter
    def last_workspace(self, folder: Path | None) -> None:
        self.data["last_workspace"] = str(folder) if folder else None
