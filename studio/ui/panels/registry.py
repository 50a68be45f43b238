"""The tool panels the main window docks, in menu order.

A tool adds its panel with one ``PanelSpec`` line here. The main window shows its docks first
and builds the panels right after the first frame (or at once when one is needed), so importing
a panel's module — numpy, pyqtgraph, the tool's widgets — never delays the window's start.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from studio.ui.panels.base import Panel


@dataclass(frozen=True)
class PanelSpec:
    """Where a panel class lives, and the name and title its dock shows before it is built."""

    name: str
    title: str
    module: str
    class_name: str

    def load(self) -> type[Panel]:
        """Import the panel's module and return its class."""
        return getattr(importlib.import_module(self.module), self.class_name)


PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("graph", "Graph", "studio.ui.panels.graph", "GraphPanel"),
    PanelSpec("profiler", "Profiler", "studio.ui.panels.profiler", "ProfilerPanel"),
    PanelSpec("accuracy", "Accuracy", "studio.ui.panels.accuracy", "AccuracyPanel"),
    PanelSpec("convert", "Converter", "studio.ui.panels.convert", "ConvertPanel"),
    PanelSpec("advisor", "Advisor", "studio.ui.panels.advisor", "AdvisorPanel"),
    PanelSpec("gallery", "Gallery", "studio.ui.panels.gallery", "GalleryPanel"),
    PanelSpec("hosts", "Hosts", "studio.ui.panels.hosts", "HostsPanel"),
    PanelSpec("deploy", "Deployment", "studio.ui.panels.deploy", "DeployPanel"),
    PanelSpec("terminal", "Terminal", "studio.ui.panels.terminal", "TerminalPanel"),
    PanelSpec("run", "Run", "studio.ui.panels.run", "RunPanel"),
    PanelSpec("cluster", "Cluster", "studio.ui.panels.cluster", "ClusterPanel"),
)


def tool_panels() -> list[type[Panel]]:
    """Panel classes, one per tool, in the order of the Tools menu (imports them all)."""
    return [spec.load() for spec in PANELS]
