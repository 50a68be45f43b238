"""Read OpenSSH client configuration (``~/.ssh/config``) into host entries.

paramiko's ``SSHClient`` never reads ``~/.ssh/config``; :class:`paramiko.SSHConfig` parses it
(Host patterns, ``Match``, tokens) but returns the port as a string and IdentityFile as a list,
and knows nothing of ``Include``. This module expands ``Include`` itself (globs, paths relative
to ``~/.ssh``, as ssh_config(5) says), then asks paramiko for the options of one alias.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path

from studio.errors import UserError
from studio.remote.hosts import HostEntry

_INCLUDE = re.compile(r"^\s*include\s+(.+)$", re.IGNORECASE)
_HOST = re.compile(r"^\s*host\s+(.+)$", re.IGNORECASE)
MAX_INCLUDE_DEPTH = 16  # OpenSSH's READCONF_MAX_DEPTH


def default_path() -> Path:
    """The user's ``~/.ssh/config``."""
    return Path.home() / ".ssh" / "config"


def _expand_includes(path: Path, depth: int = 0) -> list[str]:
    if depth > MAX_INCLUDE_DEPTH:
        raise UserError("Include nesting is too deep (a file includes itself?)", path,
                        "Remove the Include loop from your ssh configuration.")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"Cannot read the ssh configuration: {exc.strerror or exc}", path,
                        "Check that the file exists and is readable.") from exc
    lines: list[str] = []
    for raw in text.splitlines():
        match = _INCLUDE.match(raw)
        if not match:
            lines.append(raw)
            continue
        for pattern in match.group(1).split():
            pattern = os.path.expanduser(pattern.strip('"'))
            if not os.path.isabs(pattern):  # relative Includes live in ~/.ssh (user config)
                pattern = str(path.parent / pattern)
            for included in sorted(glob.glob(pattern)):
                if os.path.isfile(included):
                    lines.extend(_expand_includes(Path(included), depth + 1))
    return lines


@dataclass
class SshConfig:
    """A parsed OpenSSH client configuration."""

    path: Path
    lines: list[str]

    @classmethod
    def load(cls, path: Path | None = None) -> SshConfig:
        """Parse ``path`` (default ``~/.ssh/config``) with its Includes expanded."""
        path = Path(path) if path is not None else default_path()
        return cls(path, _expand_includes(path))

    def aliases(self) -> list[str]:
        """Host names written without wildcards, in file order (what a picker offers)."""
        names: list[str] = []
        for raw in self.lines:
            match = _HOST.match(raw.split("#", 1)[0])
            if match:
                for name in match.group(1).split():
                    if not any(c in name for c in "*?!") and name not in names:
                        names.append(name)
        return names

    def matches(self, alias: str) -> bool:
        """True when a Host line other than a bare ``*`` names ``alias`` (patterns allowed)."""
        for raw in self.lines:
            match = _HOST.match(raw.split("#", 1)[0])
            if not match:
                continue
            for pattern in match.group(1).split():
                if pattern != "*" and not pattern.startswith("!") and fnmatch.fnmatchcase(alias, pattern):
                    return True
        return False

    def lookup(self, alias: str) -> dict:
        """paramiko's option dictionary for ``alias`` (all matching Host blocks applied)."""
        import paramiko

        try:
            config = paramiko.SSHConfig.from_text("\n".join(self.lines))
            return config.lookup(alias)
        except Exception as exc:  # paramiko raises ConfigParseError and others on bad lines
            raise UserError(f"The ssh configuration cannot be parsed: {exc}", self.path,
                            "Fix the line it names (see `man ssh_config`).") from exc

    def entry(self, alias: str, name: str | None = None) -> HostEntry:
        """A HostEntry filled from ``alias``; ``name`` defaults to the alias itself."""
        if not self.matches(alias):
            raise UserError(f"No Host {alias!r} in the ssh configuration", self.path,
                            f"Known aliases: {', '.join(self.aliases()) or 'none'}.")
        options = self.lookup(alias)
        identity = (options.get("identityfile") or [None])[0]
        auth = "key"
        if identity is None and os.environ.get("SSH_AUTH_SOCK"):
            auth = "agent"
        proxy = options.get("proxyjump")
        if proxy and proxy.lower() == "none":
            proxy = None
        command = options.get("proxycommand")
        if command and command.lower() != "none" and not proxy:
            # Dropping it silently would connect to the wrong place (or not at all).
            raise UserError(f"Host {alias!r} is reached with ProxyCommand, which Studio does not run", self.path,
                            "Use ProxyJump for it (ssh -J), or add the host with `studio ssh add NAME --host ... "
                            "--proxy-jump user@jumphost:port`.")
        return HostEntry(
            name=name or _safe_name(alias),
            host=options.get("hostname", alias),
            port=int(options.get("port", 22)),
            user=options.get("user", ""),
            auth=auth,
            key_file=os.path.expanduser(identity) if identity else None,
            proxy_jump=proxy,
        )


def _safe_name(alias: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", alias).strip("-._")[:64] or "host"


def entry_from_ssh_config(alias: str, name: str | None = None, path: Path | None = None) -> HostEntry:
    """Shortcut: the HostEntry for ``alias`` in ``path`` (default ``~/.ssh/config``)."""
    return SshConfig.load(path).entry(alias, name)
