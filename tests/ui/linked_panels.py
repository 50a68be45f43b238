"""Panels made for a test the way the main window makes them: one job runner, shared links."""

from __future__ import annotations

from contextlib import contextmanager

from studio.ui.jobs import JobRunner
from studio.ui.links import PanelLinks


@contextmanager
def linked_panels(qtbot, *classes, size=(1000, 700)):
    """Yield (panels..., links), each panel shown; every job is cancelled and waited for afterwards."""
    runner, links = JobRunner(), PanelLinks()
    panels = [cls(runner, links=links) for cls in classes]
    for widget in panels:
        qtbot.addWidget(widget)
        widget.resize(*size)
        widget.show()
    try:
        yield (*panels, links)
    finally:
        runner.cancel_all()
        runner.wait_for_done(5000)
