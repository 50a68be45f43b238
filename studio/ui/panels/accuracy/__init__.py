"""The Accuracy dock panel (findings, per-op table, scatter, drill-down).

The panel class is imported on first use, so the Qt-free ``state`` module imports without Qt.
"""

from studio.ui.panels.lazy import panel_getattr

__all__ = ["AccuracyPanel"]
__getattr__ = panel_getattr(__name__, "AccuracyPanel")
