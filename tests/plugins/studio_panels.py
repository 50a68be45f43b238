"""The GUI fixtures of the test suite (as napari's ``make_napari_viewer``): panels and main windows
made the way the application makes them, shown, and torn down with every job they started
cancelled and waited for; reference cycles are collected on the GUI thread only.

- ``make_panel(PanelClass, size=(1280, 720))``: one shown panel with its own job runner and links.
- ``make_panels(A, B, ..., size=(1000, 700))``: panels sharing one runner and one set of links, as
  the main window links them; returns ``(a, b, ..., links)``.
- ``make_window(restore_layout=False, build_all=False)``: a shown ``MainWindow`` (user settings from
  the test's STUDIO_HOME, notices logged rather than shown in dialogs).
"""

from __future__ import annotations

import pytest

# Jobs a test left running (a profile, an upload) get this long to end after being cancelled.
WAIT_FOR_JOBS_MS = 10_000


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_gui_thread(request):
    """GUI tests collect reference cycles on the GUI thread only, as the application does
    (``studio.ui.gui_gc``): a collection on a job's thread freed an earlier test's plot widgets
    there and crashed the process about one run in six."""
    if "qtbot" not in request.fixturenames:  # make_panel / make_window use qtbot too
        yield
        return
    from studio.ui.gui_gc import GuiThreadCollector

    collector = GuiThreadCollector()
    try:
        yield
    finally:
        collector.stop()


def _stop_jobs(runners) -> None:
    for runner in runners:
        runner.cancel_all()
    for runner in runners:
        runner.wait_for_done(WAIT_FOR_JOBS_MS)


@pytest.fixture
def make_panels(qtbot):
    """``make_panels(*classes, size=(1000, 700))`` -> ``(*panels, links)``: shown panels sharing one
    job runner and one ``PanelLinks``; every job is cancelled and waited for when the test ends."""
    from studio.ui.jobs import JobRunner
    from studio.ui.links import PanelLinks

    runners = []

    def make(*classes, size=(1000, 700)):
        runner, links = JobRunner(), PanelLinks()
        runners.append(runner)
        panels = [cls(runner, links=links) for cls in classes]
        for widget in panels:
            qtbot.addWidget(widget)
            widget.resize(*size)
            widget.show()
        return (*panels, links)

    yield make
    _stop_jobs(runners)


@pytest.fixture
def make_panel(make_panels):
    """``make_panel(PanelClass, size=(1280, 720))``: a shown panel with its own job runner and links
    (``panel.runner``, ``panel.links``); every job it started is cancelled and waited for when the
    test ends."""

    def make(cls, size=(1280, 720)):
        panel, _links = make_panels(cls, size=size)
        return panel

    return make


@pytest.fixture
def make_window(qtbot):
    """``make_window(restore_layout=False, build_all=False, show=True)``: Studio's main window with
    the test's user settings and a notifier that shows no dialogs; ``build_all`` builds every panel
    (not the placeholders of the first frame). Its jobs are cancelled and waited for at the end."""
    from studio.core.settings import UserSettings
    from studio.ui.main_window import MainWindow
    from studio.ui.notifier import Notifier

    windows = []

    def make(restore_layout: bool = False, build_all: bool = False, show: bool = True, notifier=None):
        window = MainWindow(UserSettings.load(), notifier or Notifier(show_dialogs=False),
                            restore_layout=restore_layout)
        qtbot.addWidget(window)
        windows.append(window)
        if build_all:
            for name in window.panels:
                window.build_panel(name)
        if show:
            window.show()
        return window

    yield make
    _stop_jobs([window.runner for window in windows])
