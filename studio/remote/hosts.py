"""Host entries (where to connect and how to authenticate) and the per-user file that keeps them.

Entries live in ``hosts.toml`` in the user config folder (``STUDIO_HOME`` overrides). Only the
way to authenticate is stored — a key file path, "agent" or "password" — never a secret.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.core.errors import UserError
from studio.core.toml_fields import TomlPlace, expect_int, expect_table, expect_text, reject_misspelled
from studio.core.toml_store import NamedTableStore, check_entry_name

AUTH_METHODS = ("key", "agent", "password")
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

    # studio.core.serial: no None values in the TOML table (TOML has no null), nor in ``ssh list --json``
    __json_omit_empty__ = ("key_file", "proxy_jump", "toolkit", "extra")

    def __post_init__(self) -> None:
        check_entry_name(self.name, "Host", "host entry")
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


class HostStore(NamedTableStore[HostEntry], section="hosts", noun="host", entry_type=HostEntry,
                add_hint="Add it with `studio ssh add {name} --host HOSTNAME`."):
    """The user's host entries, loaded from and saved to ``hosts.toml`` (``store.hosts``)."""

    hosts: dict[str, HostEntry]  # the entries by name (a property the base class adds)
