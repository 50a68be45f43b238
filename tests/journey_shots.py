"""Pictures of a journey's steps, for looking at them: the journey tests call :func:`shot` after each
step; it does nothing unless ``STUDIO_JOURNEY_SHOTS`` names a folder. ``STUDIO_JOURNEY_SIZE``
(e.g. ``1024x768``) sizes the window instead of the tests' 1,280 × 720.

    STUDIO_JOURNEY_SHOTS=/tmp/shots STUDIO_JOURNEY_SIZE=1024x768 DISPLAY=:97 QT_QPA_PLATFORM=xcb \\
        python -m pytest tests/ui/test_journey_pipeline_gallery.py
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_SIZE = (1280, 720)


def journey_size() -> tuple[int, int]:
    """The window size of the journey tests: 1,280 × 720 unless ``STUDIO_JOURNEY_SIZE`` says otherwise."""
    text = os.environ.get("STUDIO_JOURNEY_SIZE", "")
    if not text:
        return DEFAULT_SIZE
    width, _, height = text.lower().partition("x")
    return int(width), int(height)


def shot(window, journey: str, step: str) -> Path | None:
    """Save ``window`` as ``<journey>_<W>x<H>_<step>.png`` in ``STUDIO_JOURNEY_SHOTS`` (when set)."""
    folder = os.environ.get("STUDIO_JOURNEY_SHOTS")
    if not folder:
        return None
    from PySide6.QtWidgets import QApplication

    QApplication.processEvents()
    path = Path(folder) / f"{journey}_{window.width()}x{window.height()}_{step}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    window.grab().save(str(path))
    return path
