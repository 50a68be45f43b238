"""The Profiler dock panel (timeline, statistics, summary, comparison)."""

from studio.ui.panels.profiler.panel import ProfilerPanel

__all__ = ["ProfilerPanel"]
