"""Logging set-up: one rotating log file per user, its path always known and shown."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

from studio.core.paths import log_dir

LOG_FILE_NAME = "studio.log"
_FORMAT = "%(asctime)s %(levelname)-7s %(threadName)s %(name)s: %(message)s"


def log_file_path() -> Path:
    """The file every Studio log record goes to."""
    return log_dir() / LOG_FILE_NAME


def setup_logging(level: int = logging.INFO) -> Path:
    """Send Studio's log records (and paramiko's warnings and errors) to the rotating log file;
    return its path. Safe to call twice."""
    path = log_file_path()
    root = logging.getLogger("studio")
    root.setLevel(level)
    handler = _file_handler(root, path)
    _file_handler(logging.getLogger("paramiko"), path, handler)
    return path


def _file_handler(logger: logging.Logger, path: Path, handler: logging.Handler | None = None) -> logging.Handler:
    """The handler writing ``logger``'s records to ``path``: the one it has, else ``handler`` or a new one."""
    for existing in list(logger.handlers):
        known = getattr(existing, "_studio_file", None)
        if known == str(path):
            return existing
        if known is not None:  # STUDIO_HOME changed (tests, scripts): follow it
            logger.removeHandler(existing)
            if existing is not handler:
                existing.close()
    if handler is None:
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
        handler.setFormatter(logging.Formatter(_FORMAT))
        handler._studio_file = str(path)  # type: ignore[attr-defined]
    logger.addHandler(handler)
    return handler
