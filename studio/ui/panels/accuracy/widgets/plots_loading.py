"""Import the Accuracy panel's pyqtgraph views in a job's thread before its result arrives."""

from __future__ import annotations


def plots_imported_first(job):
    """Run ``job`` after importing the pyqtgraph views (half a second of imports, in the job's
    thread rather than the GUI's) and loading the colour map they use."""
    from studio.core.jobs import Progress

    yield Progress(None, "loading the plots")
    import pyqtgraph as pg

    import studio.ui.panels.accuracy.plots  # noqa: F401

    pg.colormap.get("viridis")  # read from a file once, then cached by pyqtgraph
    return (yield from job)
