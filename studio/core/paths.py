"""Where Studio keeps per-user files.

By default the platform's user directories (``platformdirs``); when ``STUDIO_HOME`` is set, all
of them live under that one folder instead, so tests and scripts stay isolated from the user's
real settings.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "studio"
HOME_ENV = "STUDIO_HOME"


def _home_override() -> Path | None:
    value = os.environ.get(HOME_ENV)
    return Path(value).expanduser().resolve() if value else None


def _user_dir(kind: str) -> Path:
    override = _home_override()
    if override is not None:
        path = override / kind
    else:
        import platformdirs  # small, but only needed here

        getter = {
            "config": platformdirs.user_config_dir,
            "data": platformdirs.user_data_dir,
            "cache": platformdirs.user_cache_dir,
            "logs": platformdirs.user_log_dir,
        }[kind]
        path = Path(getter(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_dir() -> Path:
    """Per-user settings (settings.toml, window layout)."""
    return _user_dir("config")


def data_dir() -> Path:
    """Per-user data (the demo workspace lives here)."""
    return _user_dir("data")


def cache_dir() -> Path:
    """Per-user caches that can be deleted at any time."""
    return _user_dir("cache")


def log_dir() -> Path:
    """Per-user log files."""
    return _user_dir("logs")
