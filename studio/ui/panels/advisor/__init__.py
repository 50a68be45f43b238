"""The advisor panel."""

from studio.ui.panels.advisor.panel import AdvisorPanel

__all__ = ["AdvisorPanel"]
