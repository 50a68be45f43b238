"""Imported first by the workers' fork server (``studio.core.workers.PRELOAD``): lowers its priority.

The fork server imports numpy and the trace decoders as it starts (half a second of a core), and
every worker it forks inherits its niceness; at a lower priority all of that leaves the cores to
the window when they are busy. Only the fork server imports this module: importing it in the GUI's
process would lower the window's own priority.
"""

from __future__ import annotations

import os

from studio.core.workers import NICENESS


def lower() -> None:
    """Set this process's niceness to ``NICENESS`` (never lower it back: that needs privileges)."""
    if not hasattr(os, "nice"):
        return
    try:
        os.nice(max(0, NICENESS - os.nice(0)))
    except OSError:
        pass


lower()
