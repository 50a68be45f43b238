"""The remote layer: reaching SSH hosts (no Qt, nothing above it imported).

Public names other code uses:

- :class:`studio.remote.context.HostContext` — ONE per process (built by the main window and by
  each CLI command): the host store, known hosts, the secret asker, and a per-host connection
  pool (``context.connection(name)`` reuses a live connection, drops a dead one;
  ``context.connect(name)`` gives a fresh one the caller owns). Panels and commands never build a
  HostStore or KnownHosts themselves.
- :mod:`studio.remote.hosts` — :class:`HostEntry`, :class:`HostStore` (hosts.toml).
- :mod:`studio.remote.known_hosts` — :class:`KnownHosts`, :class:`UnknownHostKey`,
  :class:`HostKeyChanged`, :func:`fingerprint`.
- :mod:`studio.remote.connection` — :class:`SshConnection`, :func:`connect`,
  :func:`fetch_host_key`, :class:`AuthFailed`.
- :mod:`studio.remote.ssh_config` — importing entries from ``~/.ssh/config``.
- :mod:`studio.remote.secrets` — keyring-backed passwords and passphrases (:func:`cli_asker`).

paramiko is imported only here and by :mod:`studio.targets.ssh` (lazily, so the window opens fast).
"""
