"""The accuracy analyzer panel."""

from studio.ui.panels.accuracy.panel import AccuracyPanel

__all__ = ["AccuracyPanel"]
