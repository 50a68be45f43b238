"""The panel fixture of the GUI tests (as napari's ``make_napari_viewer``)."""

from __future__ import annotations

import pytest
from linked_panels import linked_panels


@pytest.fixture
def make_panel(qtbot):
    """``make_panel(PanelClass, size=(1280, 720))``: a shown panel with its own job runner and links;
    every job it started is cancelled and waited for when the test ends."""
    opened = []

    def make(cls, size=(1280, 720)):
        context = linked_panels(qtbot, cls, size=size)
        panel, _links = context.__enter__()
        opened.append(context)
        return panel

    yield make
    for context in reversed(opened):
        context.__exit__(None, None, None)
