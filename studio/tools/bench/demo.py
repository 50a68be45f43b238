"""The benchmark's part of the demo workspace: a run configuration that times the U-Net here.

The Run toolbar is empty in a fresh workspace; the demo gets one local configuration, so Run
(Shift+F10) shows a console with real output at once. It runs Studio's own ``bench`` command with
the interpreter (or packaged program) that runs Studio now, named, not by its absolute path: a
local run finds it first on PATH (:func:`studio.runs.runner.studio_on_path`), so a copied or moved
workspace runs the Studio that opens it, not a clone's ``.venv/bin/python``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress

CONFIG_NAME = "Bench U-Net here"  # fits the Run toolbar's box


def studio_command() -> list[str]:
    """The argv that starts this Studio's command line (a packaged program is its own CLI)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "studio"]


def studio_command_by_name() -> list[str]:
    """:func:`studio_command` with the interpreter (or program) by its name, as a configuration stores it."""
    first, *rest = studio_command()
    return [Path(first).name, *rest]


def add_to_demo(folder: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, list[Path]]:
    """Add the local benchmark configuration to the demo's ``studio.toml`` unless one of that name exists."""
    from studio.runs.config import RunConfig, load_configs, save_config
    from studio.core.workspace import Workspace

    yield Progress(None, "adding a run configuration")
    workspace = Workspace.create(Path(folder))
    if any(c.name == CONFIG_NAME for c in load_configs(workspace)):
        return []
    command = shlex.join([*studio_command_by_name(), "bench", "models/unet.onnx", "--loop", "20", "--warmup", "3"])
    save_config(workspace, RunConfig(name=CONFIG_NAME, command=command))
    return []
