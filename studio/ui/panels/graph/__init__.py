"""The graph panel (model graph viewer)."""

from studio.ui.panels.graph.panel import GraphPanel

__all__ = ["GraphPanel"]
