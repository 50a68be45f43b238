"""Host entries (where to connect and how to authenticate) and the per-user file that keeps them.

Entries live in ``hosts.toml`` in the user config folder (``STUDIO_HOME`` overrides). Only the
way to authenticate is stored — a key file path, "agent" or "password" — never a secret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from studio.errors import UserError
from studio.serial import named_table
from studio.toml_fields import TomlPlace, expect_int, expect_table, expect_text, reject_misspelled

AUTH_METHODS = ("key", "agent", "password")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_KNOWN = {"host", "port", "user", "auth", "key_file", "proxy_jump", "toolkit"}


@dataclass
class HostEntry:
    """One SSH host: a name the user picks and the facts needed to reach it."""

    name: str
    host: str
    port: int = 22
    user: str = ""
    auth: str = "key"                # "key", "agent" or "password"
    key_file: str | None = None      # for auth == "key"; None = the default keys in ~/.ssh
    proxy_jump: str | None = None    # another host entry name (or user@host:port) to hop through
    toolkit: str | None = None       # CANN toolkit folder on the host (holding set_env.sh), if known
    extra: dict = field(default_factory=dict)  # fields later features add, kept on round trips

    # studio.serial: no None values in the TOML table (TOML has no null), nor in ``ssh list --json``
    __json_omit_empty__ = ("key_file", "proxy_jump", "toolkit", "extra")

    def __post_init__(self) -> None:
        if not _NAME.match(self.name or ""):
            raise UserError(f"Host name {self.name!r} is not usable", "host entry",
                            "Use letters, digits, '.', '_' or '-' (up to 64 characters), starting with a letter or digit.")
        if not self.host:
            raise UserError(f"Host {self.name!r} has no address", "host entry", "Give --host HOSTNAME or an IP address.")
        if not 0 < int(self.port) < 65536:
            raise UserError(f"Port {self.port} of host {self.name!r} is out of range", "host entry",
                            "Use a TCP port between 1 and 65535 (SSH's default is 22).")
        self.port = int(self.port)
        if self.auth not in AUTH_METHODS:
            raise UserError(f"Unknown authentication {self.auth!r} for host {self.name!r}", "host entry",
                            f"Use one of: {', '.join(AUTH_METHODS)}.")

    @property
    def address(self) -> str:
        """``user@host:port`` as people write it in messages."""
        user = f"{self.user}@" if self.user else ""
        return f"{user}{self.host}:{self.port}"

    @classmethod
    def from_table(cls, name: str, table: dict, place: TomlPlace | None = None) -> HostEntry:
        """The entry a ``[hosts.NAME]`` table describes; ``place`` names its file and lines in messages.
        Keys Studio does not know are kept in ``extra`` (later versions add some), unless they look
        like a misspelled known key."""
        def at(key: str | None = None) -> str:
            return place(("hosts", name), key) if place else f"host {name}" + (f", key {key}" if key else "")

        expect_table(table, at(), '[hosts.NAME] with host = "..."')
        reject_misspelled(table, _KNOWN | {"extra"}, at())
        fields: dict = {}
        for key in sorted(_KNOWN - {"port"}):
            value = expect_text(table, key, at(key), required=key == "host")
            if value is not None:
                fields[key] = value
        port = expect_int(table, "port", at("port"), 1, 65535, example=22)
        if port is not None:
            fields["port"] = port
        extra = dict(expect_table(table.get("extra", {}), at("extra"), "[hosts.NAME.extra]"))
        extra.update({k: v for k, v in table.items() if k not in _KNOWN and k != "extra"})
        try:
            return cls(name=name, extra=extra, **fields)
        except UserError as exc:  # the checks of the entry itself: say where the entry was read
            raise UserError(exc.what, at(), exc.fix) from None


class HostStore:
    """The user's host entries, loaded from and saved to ``hosts.toml``."""

    def __init__(self, path: Path | None = None):
        from studio.paths import config_dir

        self.path = Path(path) if path is not None else config_dir() / "hosts.toml"
        self.hosts: dict[str, HostEntry] = {}
        if self.path.is_file():
            from studio.toml_store import load_toml

            data = load_toml(self.path)
            place = TomlPlace(self.path)
            hosts = expect_table(data.get("hosts", {}), place(("hosts",)), '[hosts.NAME] tables')
            for name, table in hosts.items():
                self.hosts[name] = HostEntry.from_table(name, table, place)

    def get(self, name: str) -> HostEntry:
        """The entry called ``name``; a UserError listing the known names otherwise."""
        try:
            return self.hosts[name]
        except KeyError:
            known = ", ".join(sorted(self.hosts)) or "none yet"
            raise UserError(f"No host called {name!r}", self.path,
                            f"Add it with `studio ssh add {name} --host HOSTNAME`. Known hosts: {known}.") from None

    def put(self, entry: HostEntry) -> None:
        """Add or replace an entry (call ``save`` to write it)."""
        self.hosts[entry.name] = entry

    def remove(self, name: str) -> None:
        self.get(name)
        del self.hosts[name]

    def save(self) -> None:
        from studio.toml_store import save_toml

        save_toml(self.path, {"hosts": {name: named_table(e) for name, e in sorted(self.hosts.items())}})
