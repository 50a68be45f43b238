"""Where a run goes: a Target for this computer (and, with the remote layer, for a host)."""

from __future__ import annotations


def local_target(toolkit: str | None = None):
    """A Target for this computer."""
    try:
        from studio.targets.local import LocalTarget
    except ImportError:  # the remote layer not merged yet: the same class under its old name
        from studio.tools.exec.local import LocalExecutor as LocalTarget
    return LocalTarget(toolkit)
