"""The Converter panel: a three-page wizard over studio.tools.convert."""

from studio.ui.panels.convert.panel import ConvertPanel

__all__ = ["ConvertPanel"]
