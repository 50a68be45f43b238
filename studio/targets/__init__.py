"""Targets: where an engine runs — this computer or an SSH host — behind one API.

Public names:

- :class:`Target` (:mod:`studio.targets.base`): ``run`` (streamed :class:`OutputLine` s, exit
  code; cancel kills the process group), ``run_script`` (a short check), ``put``/``get`` (atomic
  copies with progress), ``workdir`` (a created, symlink-free work folder), ``realpath``,
  ``toolkit_setup`` (the CANN ``set_env.sh`` line), ``key`` (the job key, ``host:NAME``).
- :class:`LocalTarget` and :class:`SshTarget`; :func:`target_for` picks one from a
  :class:`~studio.remote.context.HostContext` and a host name (None = this computer).
- :mod:`studio.targets.files` — the one temporary-name-then-rename copy routine.
- :mod:`studio.targets.probe` — the connection checklist (a script run on the host).

Engines take a Target and do not care where it points.
"""

from __future__ import annotations

from studio.targets.base import DEFAULT_TOOLKIT, OutputLine, Target, collect, env_setup_line
from studio.targets.local import LocalTarget
from studio.targets.ssh import SshTarget

__all__ = ["DEFAULT_TOOLKIT", "LocalTarget", "OutputLine", "SshTarget", "Target", "collect", "env_setup_line",
           "target_for"]


def target_for(context, host: str | None, toolkit: str | None = None) -> Target:
    """The target for ``host`` on ``context``'s connection pool; None means this computer."""
    if host is None:
        return LocalTarget(toolkit=toolkit)
    return SshTarget(context.entry(host), context)
