"""Where a headless command runs: this computer (a Target from the remote layer)."""

from __future__ import annotations


def local_target(toolkit: str | None = None):
    """A Target for this computer."""
    try:
        from studio.targets.local import LocalTarget
    except ImportError:  # the remote layer not merged yet: the same class under its old name
        from studio.tools.exec.local import LocalExecutor as LocalTarget
    return LocalTarget(toolkit)
