"""Logging set-up: one rotating log file per user, its path always known and shown."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

from studio.paths import log_dir

LOG_FILE_NAME = "studio.log"
_FORMAT = "%(asctime)s %(levelname)-7s %(threadName)s %(name)s: %(message)s"


def log_file_path() -> Path:
    """The file every Studio log record goes to."""
    return log_dir() / LOG_FILE_NAME


def setup_logging(level: int = logging.INFO) -> Path:
    """Send Studio's log records to the rotating log file; return its path. Safe to call twice."""
    path = log_file_path()
    root = logging.getLogger("studio")
    root.setLevel(level)
    for handler in list(root.handlers):
        known = getattr(handler, "_studio_file", None)
        if known == str(path):
            return path
        if known is not None:  # STUDIO_HOME changed (tests, scripts): follow it
            root.removeHandler(handler)
            handler.close()
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler._studio_file = str(path)  # type: ignore[attr-defined]
    root.addHandler(handler)
    return path
