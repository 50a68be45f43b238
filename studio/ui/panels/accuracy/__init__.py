"""The Accuracy dock panel (findings, per-op table, scatter, drill-down).

The panel class is imported on first use, so the Qt-free parts (``state``) import without Qt.
"""

__all__ = ["AccuracyPanel"]


def __getattr__(name: str):
    if name == "AccuracyPanel":
        from studio.ui.panels.accuracy.panel import AccuracyPanel

        return AccuracyPanel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
