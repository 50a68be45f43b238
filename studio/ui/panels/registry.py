"""The tool panels the main window docks, in menu order.

A tool adds its panel by listing its own class here (``studio.ui.panels.<tool>``). Panel modules
import their engines lazily, so importing them all here keeps the window's start fast.
"""

from __future__ import annotations

from studio.ui.panels.accuracy import AccuracyPanel
from studio.ui.panels.base import Panel
from studio.ui.panels.convert import ConvertPanel
from studio.ui.panels.deploy import DeployPanel
from studio.ui.panels.graph import GraphPanel
from studio.ui.panels.hosts import HostsPanel
from studio.ui.panels.profiler import ProfilerPanel
from studio.ui.panels.terminal import TerminalPanel


def tool_panels() -> list[type[Panel]]:
    """Panel classes, one per tool, in the order of the Tools menu (Ctrl+1, Ctrl+2, ...)."""
    return [GraphPanel, ProfilerPanel, AccuracyPanel, ConvertPanel, HostsPanel, DeployPanel, TerminalPanel]
