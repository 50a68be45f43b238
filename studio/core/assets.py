"""Access to the files in ``resources/`` (icons, style sheets, demo recipes).

In an installed wheel (and a PyInstaller bundle) they live inside the package as
``studio/resources``; in a source checkout or an editable install they are the top-level
``resources/`` folder next to the package.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path


def resources_root() -> Traversable:
    """The folder holding Studio's resources, wherever Studio is installed."""
    packaged = resources.files("studio") / "resources"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "resources"


def resource(*parts: str) -> Traversable:
    """One resource file, e.g. ``resource("icons", "studio.svg")``."""
    node = resources_root()
    for part in parts:
        node = node / part
    return node


def read_text(*parts: str) -> str:
    """The text of one resource file (UTF-8)."""
    return resource(*parts).read_text(encoding="utf-8")
