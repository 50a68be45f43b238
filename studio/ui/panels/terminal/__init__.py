"""The Terminal panel (interactive SSH shells)."""

from studio.ui.panels.terminal.panel import TerminalPanel

__all__ = ["TerminalPanel"]
