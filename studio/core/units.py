"""Quantities as people read them in messages, tables and reports."""

from __future__ import annotations

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_DECIMAL = ("B", "KB", "MB", "GB", "TB", "PB")


def human_size(size: float, decimal: bool = False) -> str:
    """``512 B``, ``2.9 KiB``, ``1.9 MiB``... in powers of 1024; with ``decimal``, ``79.8 KB``,
    ``102.1 MB`` in powers of 1000 (as file managers show sizes). Negative sizes (a file that
    shrank) keep their sign."""
    step, units = (1000.0, _DECIMAL) if decimal else (1024.0, _BINARY)
    if abs(size) < step:
        return f"{size:.0f} B"
    for unit in units[1:-1]:
        size /= step
        if abs(size) < step:
            return f"{size:.1f} {unit}"
    return f"{size / step:.1f} {units[-1]}"


def parse_number(text: str) -> int | float | None:
    """``text`` as a number (an int when it is one), or None when it is not one."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None
