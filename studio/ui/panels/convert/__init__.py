"""The Converter panel: a three-page wizard over studio.tools.convert.

The panel class is imported on first use, so the Qt-free ``state`` module imports without Qt.
"""

from studio.ui.panels.lazy import panel_getattr

__all__ = ["ConvertPanel"]
__getattr__ = panel_getattr(__name__, "ConvertPanel")
