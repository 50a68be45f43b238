"""The cluster panel: the ranks of a multi-rank profile side by side, their communication and memory."""

from studio.ui.panels.cluster.panel import ClusterPanel

__all__ = ["ClusterPanel"]
