"""Reading the small text files ATC takes as options (AIPP config, fusion switch file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from studio.core.safe_read import SETTINGS_CAP, explain_os_errors, read_text

Parsed = TypeVar("Parsed")


def load_atc_file(path: Path | str, what: str, flag: str, parse: Callable[[str, Path], Parsed]) -> Parsed:
    """Read the ``what`` given to ATC's ``flag`` and parse it with ``parse(text, path)``; the result
    keeps its ``path``. A missing file is ATC's E10410; text that is not UTF-8 a UserError naming
    the byte."""
    path = Path(path)
    with explain_os_errors(path, what, f"Check the {flag} path.",
                           missing=f"{what[:1].upper()}{what[1:]} not found (E10410)"):
        text = read_text(path, what, SETTINGS_CAP)
    parsed = parse(text, path)
    parsed.path = path
    return parsed
