"""What the Cluster panel tests share: the real exports' folders, opening one and waiting for every
job the panel starts, and a screenshot when STUDIO_SHOTS names a folder."""

from __future__ import annotations

import os
from pathlib import Path

QWEN = "cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2"
TEXT2 = "cluster_pytorch/msinsight_text_2rank_level2/level2"
DB2 = "cluster_pytorch/msinsight_db_2rank_level2/level2"


def open_and_wait(qtbot, panel, folder: Path, tab=None) -> None:
    """Open ``folder`` in ``panel`` and wait until its report, collectives, memory and idle-gap jobs
    have all ended (each was started at once: opening returns before any of them ends); then show ``tab``."""
    handle = panel.open_folder(folder)
    jobs = [handle, panel.comm_handle, panel.memory_handle, getattr(panel.free, "handle", None)]
    assert handle.active, "the engine runs as a job: open_folder returns at once"
    qtbot.waitUntil(lambda: not any(job is not None and job.active for job in jobs), timeout=30000)
    if tab is not None:
        panel.tabs.setCurrentWidget(tab)
        qtbot.wait(20)


def shot(panel, name: str) -> None:
    """Save the panel as ``name``.png in STUDIO_SHOTS, when set (screenshots for a person to look at)."""
    folder = os.environ.get("STUDIO_SHOTS")
    if folder:
        panel.grab().save(str(Path(folder) / f"{name}.png"))
