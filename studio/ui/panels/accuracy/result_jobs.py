"""Starting the Accuracy panel's jobs whose result is drawn in its plots.

The first such job also imports the pyqtgraph views in its own thread, and its result waits until
the views are made (one piece per event-loop turn), so the GUI thread never stalls on them.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from studio.ui.panels.accuracy.widgets.plots_loading import plots_imported_first

FOCUS = "accuracy"  # the panel's name, for links.focus


class ResultJobs(QObject):
    """Start a job through the runner; its result goes to ``on_done`` once the plots exist.

    Signals:
        status(str): a short message for the status bar (the job's title while it runs).
    """

    status = Signal(str)

    def __init__(self, runner, tabs, parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self.tabs = tabs  # PlotTabs: the views made on first use

    def start(self, title: str, make_job, on_done):
        """Run ``make_job(cancel)`` as a job titled ``title``; returns its handle."""
        first_use = not self.tabs.made
        job = (lambda cancel: plots_imported_first(make_job(cancel))) if first_use else make_job
        handle = self.runner.start(title, job, key=f"accuracy:{title}")
        if first_use:  # the job imported pyqtgraph; the views are made in steps before the result
            handle.finished.connect(lambda result: self.tabs.when_made(lambda: on_done(result)))
        else:
            handle.finished.connect(on_done)
        # a failure is the runner's to report (the notice board, which the status line shows)
        self.status.emit(title + "…")
        return handle
