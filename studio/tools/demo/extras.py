"""What the tools add to the demo workspace (a local profile, a dump comparison, ...).

A tool contributes by shipping ``studio/tools/<tool>/demo.py`` with a job function::

    def add_to_demo(folder: Path, cancel: CancelToken | None) -> Generator[Progress, None, list[Path]]

It receives the demo workspace folder (models are in ``folder / "models"``), writes its files
under ``folder`` — skipping work whose output is already there, because it runs on every
``--demo`` start — and returns the files the window should open to show them. Tools are found by
module name, so the demo package never imports a tool and a tool never edits the demo package.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress

DemoExtra = Callable[[Path, "CancelToken | None"], Generator[Progress, None, list[Path]]]


def demo_extras() -> list[tuple[str, DemoExtra]]:
    """(tool name, add_to_demo) for every tool that ships a ``demo`` module, in name order."""
    import studio.tools

    extras = []
    for info in sorted(pkgutil.iter_modules(studio.tools.__path__), key=lambda m: m.name):
        if not info.ispkg or info.name == "demo":
            continue
        module_name = f"studio.tools.{info.name}.demo"
        if importlib.util.find_spec(module_name) is None:
            continue
        module = importlib.import_module(module_name)
        extras.append((info.name, module.add_to_demo))
    return extras


def add_tool_extras(folder: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, list[Path]]:
    """Run every tool's ``add_to_demo`` in turn; returns the files they want shown."""
    shown: list[Path] = []
    extras = demo_extras()
    for index, (tool, add_to_demo) in enumerate(extras):
        if cancel is not None:
            cancel.raise_if_cancelled()
        yield Progress(index / max(1, len(extras)), f"demo: {tool}")
        shown += (yield from add_to_demo(folder, cancel))
    return shown
