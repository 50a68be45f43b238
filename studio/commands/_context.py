"""The CLI's one :class:`~studio.remote.context.HostContext` (hosts, known hosts, secrets, pool).

Every command that reaches a host takes it from :func:`cli_context`, so one command run logs in
to a host once however many steps it has; the pool is closed when the process exits.
"""

from __future__ import annotations

import atexit
from pathlib import Path

_context = None


def cli_context(known_hosts_file: Path | None = None):
    """The process's HostContext: hosts.toml, ~/.ssh/known_hosts (+ ``known_hosts_file`` and
    ``$STUDIO_KNOWN_HOSTS``), passwords from the keyring or asked on the terminal."""
    global _context
    from studio.remote.context import HostContext
    from studio.remote.secrets import cli_asker

    if _context is None:
        _context = HostContext(asker_factory=cli_asker)
        atexit.register(_context.close)
    if known_hosts_file is not None:
        _context.also_trust(Path(known_hosts_file))
    return _context
