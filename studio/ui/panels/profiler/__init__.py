"""The Profiler dock panel (timeline, statistics, summary, comparison).

The panel class is imported on first use, so the Qt-free ``state`` module imports without Qt.
"""

from studio.ui.panels.lazy import panel_getattr

__all__ = ["ProfilerPanel"]
__getattr__ = panel_getattr(__name__, "ProfilerPanel")
