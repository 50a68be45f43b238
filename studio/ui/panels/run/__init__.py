"""The Run panel: one console tab per run of a run configuration, plus the Run menu and toolbar."""

from studio.ui.panels.run.panel import RunPanel

__all__ = ["RunPanel"]
