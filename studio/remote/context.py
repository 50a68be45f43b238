"""One :class:`HostContext` per process: host entries, known hosts, secrets and a connection pool.

The window builds one when it starts and the CLI builds one per command; every panel, command and
engine that talks to a host gets its connections from it, so nothing else builds a
:class:`~studio.remote.hosts.HostStore` or :class:`~studio.remote.known_hosts.KnownHosts` of its
own. A live connection is reused by the next job on the same host (saving the TCP, key exchange
and authentication round trips); a dead one is dropped and replaced on the next request.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from studio.remote.connection import DEAD_AFTER_S, KEEPALIVE_S, AskSecret, SshConnection, connect_remembering
from studio.remote.hosts import HostEntry, HostStore
from studio.remote.known_hosts import KnownHosts

# Makes the ask_secret callback for one login (a SecretAsker remembers what it handed out, so
# each login gets a fresh one).
AskerFactory = Callable[[], "AskSecret | None"]


def default_known_hosts(extra: list[Path] | None = None) -> KnownHosts:
    """~/.ssh/known_hosts and Studio's own file, plus ``$STUDIO_KNOWN_HOSTS`` and ``extra`` (read only)."""
    files = [Path.home() / ".ssh" / "known_hosts", *(extra or [])]
    env = os.environ.get("STUDIO_KNOWN_HOSTS")
    if env:
        files.append(Path(env))
    return KnownHosts(read_only=files)


def _pool_key(entry: HostEntry) -> tuple:
    # An edited entry (other address, user, key or jump) must not reuse the old login.
    return (entry.name, entry.host, entry.port, entry.user, entry.auth, entry.key_file, entry.proxy_jump)


class _ReadOnFirstUse:
    """An attribute whose value ``make()`` gives the first time it is read while unset (None); it can
    be set like any other. Kept in ``_NAME``, which the owner may read or replace itself."""

    def __init__(self, make: Callable[[], object]):
        self.make = make

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = getattr(obj, self.slot)
        if value is None:
            value = self.make()
            setattr(obj, self.slot, value)
        return value

    def __set__(self, obj, value) -> None:
        setattr(obj, self.slot, value)


class HostContext:
    """Where hosts come from and how they are reached; hands out pooled connections and targets.

    ``store`` and ``known_hosts`` default to the user's files (read when first needed);
    ``ask_secret`` is either an ``ask_secret(kind, prompt)`` callback or a factory of them
    (``asker_factory``). Thread-safe: jobs on different hosts connect in parallel, jobs on one
    host share its connection (paramiko multiplexes channels; SFTP clients are per thread).
    """

    def __init__(self, store: HostStore | None = None, known_hosts: KnownHosts | None = None,
                 ask_secret: AskSecret | None = None, asker_factory: AskerFactory | None = None,
                 timeout: float = 10.0, keepalive: float = KEEPALIVE_S, dead_after: float = DEAD_AFTER_S):
        self._store = store
        self.keepalive, self.dead_after = keepalive, dead_after
        self._known_hosts = known_hosts
        self._ask_secret = ask_secret
        self._asker_factory = asker_factory
        self.timeout = timeout
        self._pool: dict[tuple, SshConnection] = {}
        self._lock = threading.Lock()
        self._host_locks: dict[str, threading.Lock] = {}
        self.connects = 0  # how many logins this context made (pooled reuse does not count)

    # -- hosts -----------------------------------------------------------------------------------
    # The host entries (hosts.toml) and the known_hosts files host keys are checked against (see
    # default_known_hosts): the user's own files, read on first use unless given.
    store: HostStore = _ReadOnFirstUse(HostStore)
    known_hosts: KnownHosts = _ReadOnFirstUse(default_known_hosts)

    def reload(self) -> HostStore:
        """Read hosts.toml again (another window or the CLI may have changed it)."""
        path = self._store.path if self._store is not None else None
        self._store = HostStore(path)
        return self._store

    def also_trust(self, known_hosts_file: Path) -> None:
        """Check host keys against this known_hosts file too (read only; scripts and tests)."""
        self._known_hosts = default_known_hosts([Path(known_hosts_file)])

    def entry(self, name: str) -> HostEntry:
        """The entry called ``name`` (a UserError listing the known names otherwise)."""
        return self.store.get(name)

    def names(self) -> list[str]:
        return sorted(self.store.hosts)

    def asker(self) -> AskSecret | None:
        """The ``ask_secret`` for one login."""
        if self._asker_factory is not None:
            return self._asker_factory()
        return self._ask_secret

    # -- connections -----------------------------------------------------------------------------
    def connect(self, host: HostEntry | str, ask_secret: AskSecret | None = None) -> SshConnection:
        """A fresh connection the caller owns and closes (terminal sessions, ``ssh trust`` checks)."""
        entry = self.entry(host) if isinstance(host, str) else host
        self.connects += 1
        return connect_remembering(entry, self.known_hosts, ask_secret or self.asker(), self.timeout,
                                   self._resolve, self.keepalive, self.dead_after)

    def connection(self, host: HostEntry | str, ask_secret: AskSecret | None = None) -> SshConnection:
        """The pooled connection to ``host``: the live one if there is one, else a new login.

        Do not close it: the context does (:meth:`close`, :meth:`drop`). Two jobs asking for the
        same host at once get the same connection (the second waits for the first login).
        """
        entry = self.entry(host) if isinstance(host, str) else host
        key = _pool_key(entry)
        with self._lock:
            host_lock = self._host_locks.setdefault(entry.name, threading.Lock())
        with host_lock:
            with self._lock:
                conn = self._pool.get(key)
            if conn is not None and conn.alive:
                return conn
            if conn is not None:
                self.drop(conn)
            conn = self.connect(entry, ask_secret)
            conn.pooled = True
            with self._lock:
                self._pool[key] = conn
            return conn

    def drop(self, conn: SshConnection) -> None:
        """Forget and close a pooled connection (after it died or misbehaved)."""
        with self._lock:
            for key, value in list(self._pool.items()):
                if value is conn:
                    del self._pool[key]
        conn.pooled = False
        try:
            conn.close()
        except Exception:  # closing a broken transport may raise; it is gone either way
            pass

    def pooled(self) -> list[SshConnection]:
        with self._lock:
            return list(self._pool.values())

    def _resolve(self, hop: str) -> HostEntry:
        """A jump hop: a Studio host name, else an alias of ~/.ssh/config, else ``user@host:port``."""
        if hop in self.store.hosts:
            return self.store.hosts[hop]
        from studio.remote.ssh_config import SshConfig

        try:
            config = SshConfig.load()
            if "@" not in hop and ":" not in hop and hop in config.aliases():
                return config.entry(hop)
        except Exception:  # no or unreadable ~/.ssh/config: the hop is read as an address
            pass
        from studio.remote.jump import parse_jump

        return parse_jump(hop)

    def host_key(self, host: HostEntry | str) -> tuple[str, bytes]:
        """The key type and key ``host`` presents (through its jump hosts), without logging in to it."""
        from studio.remote.connection import fetch_host_key

        entry = self.entry(host) if isinstance(host, str) else host
        return fetch_host_key(entry, self.timeout, self.known_hosts, self._resolve, self.asker())

    def close(self) -> None:
        """Close every pooled connection (window closing, CLI command done)."""
        with self._lock:
            conns, self._pool = list(self._pool.values()), {}
        for conn in conns:
            try:
                conn.close()
            except Exception:
                pass

    def __enter__(self) -> HostContext:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
