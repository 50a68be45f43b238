"""What the Cluster panel tests share: the real exports' folders, the panel at 1,280 × 720 (the
``panel`` fixture: import it into a test module), opening a folder and waiting for its jobs, and a
screenshot when STUDIO_SHOTS names a folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from studio.ui.panels.cluster import ClusterPanel

QWEN = "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"
TEXT2 = "cluster_pytorch/msinsight_text_2rank_level2/level2"
DB2 = "cluster_pytorch/msinsight_db_2rank_level2/level2"


@pytest.fixture
def panel(make_panel):
    """A Cluster panel at 1,280 × 720."""
    return make_panel(ClusterPanel, size=(1280, 720))


@pytest.fixture
def real(real_profiles) -> Path:
    """The real fixtures' folder (fixtures/ascend/real)."""
    return real_profiles


def open_report(qtbot, panel, folder: Path) -> None:
    """Open ``folder`` and wait for its cluster report and its memory (the jobs those tabs show)."""
    handle = panel.open_folder(folder)
    assert handle.active, "the engine runs as a job: open_folder returns at once"
    qtbot.waitUntil(lambda: not handle.active and not panel.memory_handle.active, timeout=30000)


def open_and_wait(qtbot, panel, folder: Path, tab=None) -> None:
    """Open ``folder`` in ``panel`` and wait until its report, collectives, memory and idle-gap jobs
    have all ended (each was started at once: opening returns before any of them ends); then show ``tab``."""
    handle = panel.open_folder(folder)
    jobs = [handle, panel.comm_handle, panel.memory_handle, getattr(panel.free, "handle", None)]
    assert handle.active, "the engine runs as a job: open_folder returns at once"
    qtbot.waitUntil(lambda: not any(job is not None and job.active for job in jobs), timeout=30000)
    if tab is not None:
        show_tab(qtbot, panel, tab)


def show_tab(qtbot, panel, tab) -> None:
    """Bring ``tab`` to the front (a tab behind another is filled when first shown, in steps a turn
    of the event loop apart) and wait until it is filled — and for the heat map's job when it is
    the Communication tab."""
    panel.tabs.setCurrentWidget(tab)
    view = {panel.step_split: panel.step_view, panel.memory_stack: panel.memory_view}.get(tab) or getattr(
        tab, "view", None)
    if view is not None:
        qtbot.waitUntil(lambda: view.done, timeout=5000)
    if tab is panel.comm:
        qtbot.waitUntil(lambda: panel.comm.handle is None or not panel.comm.handle.active, timeout=30000)
    qtbot.wait(20)


def shot(panel, name: str) -> None:
    """Save the panel as ``name``.png in STUDIO_SHOTS, when set (screenshots for a person to look at)."""
    folder = os.environ.get("STUDIO_SHOTS")
    if folder:
        panel.grab().save(str(Path(folder) / f"{name}.png"))
