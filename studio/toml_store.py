"""Reading and writing small TOML files safely.

Writes go to a temporary file in the same folder and replace the target atomically, so a crash
mid-write never leaves a half-written settings file. A file that cannot be parsed is never
overwritten: :func:`quarantine` moves it aside so the user's data survives for inspection.
"""

from __future__ import annotations

import os
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from studio.errors import UserError


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; a missing file is an empty dict, a broken one a UserError with its line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UserError(f"Cannot read settings file: {exc.strerror}", path, "Check the file's permissions.") from exc
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError("Settings file is not UTF-8 text", f"{path}, byte {exc.start}",
                        "Restore it from a backup or delete it to start with defaults.") from exc
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message already carries "(at line L, column C)".
        raise UserError(f"Settings file is not valid TOML: {exc}", path,
                        "Fix the line named above, or delete the file to start with defaults.") from exc


def save_toml(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as TOML, atomically (temp file + rename)."""
    import tomli_w

    text = tomli_w.dumps(_drop_none(data))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            # No fsync: the rename already keeps a crashed process from leaving half a file, and
            # these writes happen on the GUI thread, where an fsync can stall on a busy disk.
            handle.write(text)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def quarantine(path: Path) -> Path:
    """Move an unreadable file aside (``name.broken-<time>``) and return its new path."""
    target = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
    os.replace(path, target)
    return target


def _drop_none(value: Any) -> Any:
    # TOML has no null; leaving None out keeps tomli_w from refusing the whole file.
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value if v is not None]
    return value
