"""The Profiler dock panel (timeline, statistics, summary, comparison).

The panel class is imported on first use, so the Qt-free parts (``state``) import without Qt.
"""

__all__ = ["ProfilerPanel"]


def __getattr__(name: str):
    if name == "ProfilerPanel":
        from studio.ui.panels.profiler.panel import ProfilerPanel

        return ProfilerPanel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
