"""The tool panels the main window docks, in menu order.

A tool adds its panel by listing its own class here (``studio.ui.panels.<tool>``). A tool whose
panel is not written yet can be represented by a FileListPanel (see ``_file_list_panel``), so the
files routed to it are still listed.
"""

from __future__ import annotations

from studio.ui.panels.accuracy import AccuracyPanel
from studio.ui.panels.base import FileListPanel, Panel
from studio.ui.panels.convert import ConvertPanel
from studio.ui.panels.graph import GraphPanel
from studio.ui.panels.profiler import ProfilerPanel


def _file_list_panel(name: str, title: str, description: str) -> type[Panel]:
    return type(f"{title.replace(' ', '')}Panel", (FileListPanel,),
                {"NAME": name, "TITLE": title, "DESCRIPTION": description})


def tool_panels() -> list[type[Panel]]:
    """Panel classes, one per tool, in the order of the Tools menu."""
    return [
        GraphPanel,
        ProfilerPanel,
        AccuracyPanel,
        ConvertPanel,
        _hosts_panel(),
        _terminal_panel(),
    ]


def _hosts_panel() -> type[Panel]:
    from studio.ui.panels.hosts import HostsPanel

    return HostsPanel


def _terminal_panel() -> type[Panel]:
    from studio.ui.panels.terminal import TerminalPanel

    return TerminalPanel
