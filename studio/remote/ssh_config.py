"""Read OpenSSH client configuration (``~/.ssh/config``) into host entries.

paramiko's ``SSHClient`` never reads ``~/.ssh/config``; :class:`paramiko.SSHConfig` parses it
(Host patterns, ``Match``, tokens) but returns the port as a string and IdentityFile as a list,
and knows nothing of ``Include``. This module expands ``Include`` itself (globs, paths relative
to ``~/.ssh``, as ssh_config(5) says), keeps where each line came from (messages name the file
and line), hands paramiko the blocks Studio honours (``Match exec`` is never run: see
:mod:`studio.remote.ssh_match`) and asks it for the options of one alias.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import Progress
from studio.core.safe_read import SETTINGS_CAP, read_text
from studio.remote.hosts import HostEntry
from studio.remote.ssh_match import (
    NEVER_MATCHES,
    SkippedMatch,
    holds_exec,
    keyword_of,
    named_hosts,
    parse_criteria,
    skip_reason,
)

_INCLUDE = re.compile(r"^\s*include\s+(.+)$", re.IGNORECASE)
_HOST = re.compile(r"^\s*host\s+(.+)$", re.IGNORECASE)
MAX_INCLUDE_DEPTH = 16  # OpenSSH's READCONF_MAX_DEPTH
MAX_LINE = 16 * 1024  # characters of one line (OpenSSH's own lines are a few hundred at most)


def default_path() -> Path:
    """The user's ``~/.ssh/config``."""
    return Path.home() / ".ssh" / "config"


def _read(path: Path) -> str:
    try:
        # A FIFO or a device would block the read (or never end): only regular files are read.
        return read_text(path, "ssh configuration", SETTINGS_CAP, errors="replace")
    except OSError as exc:
        raise UserError(f"Cannot read the ssh configuration: {exc.strerror or exc}", path,
                        "Check that the file exists and is readable.") from exc


def _expand_includes(path: Path, depth: int = 0) -> list[tuple[str, Path, int]]:
    """The lines of ``path`` with its Includes in place: (text, file, line number)."""
    if depth > MAX_INCLUDE_DEPTH:
        raise UserError("Include nesting is too deep (a file includes itself?)", path,
                        "Remove the Include loop from your ssh configuration.")
    lines: list[tuple[str, Path, int]] = []
    for number, raw in enumerate(_read(path).splitlines(), start=1):
        if len(raw) > MAX_LINE:  # paramiko splits each line with shlex, whose time grows with the length
            raise UserError(f"Line {number} of the ssh configuration is {len(raw):,} characters long (Studio reads "
                            f"lines of up to {MAX_LINE:,})", f"{path}, line {number}",
                            "Fix or remove that line; no option of ssh_config needs a value this long.")
        match = _INCLUDE.match(raw)
        if not match:
            lines.append((raw, path, number))
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
    origins: list[tuple[Path, int]] = field(default_factory=list)  # (file, line) of each of ``lines``
    skipped: list[SkippedMatch] = field(default_factory=list)      # Match blocks not applied

    def __post_init__(self) -> None:
        if not self.origins:
            self.origins = [(self.path, i) for i in range(1, len(self.lines) + 1)]
        self._effective = list(self.lines)
        self._match_names: list[str] = []
        self.skipped = []
        for index, line in enumerate(self.lines):
            parsed = keyword_of(line)
            if parsed is None or parsed[0] != "match":
                continue
            criteria = parse_criteria(parsed[1])
            reason = skip_reason(criteria, parsed[1])
            if reason is None:
                self._match_names += named_hosts(criteria)
                continue
            self._effective[index] = NEVER_MATCHES
            path, number = self.origins[index]
            # A line with an exec word may be paired differently by paramiko: Studio's reading of
            # its criteria cannot rule a host out, so the note is always shown.
            trusted = [] if holds_exec(parsed[1]) else (criteria or [])
            self.skipped.append(SkippedMatch(path, number, line, reason, trusted))

    @classmethod
    def load(cls, path: Path | None = None) -> SshConfig:
        """Parse ``path`` (default ``~/.ssh/config``) with its Includes expanded."""
        path = Path(path) if path is not None else default_path()
        expanded = _expand_includes(path)
        return cls(path, [text for text, _, _ in expanded], [(file, number) for _, file, number in expanded])

    def aliases(self) -> list[str]:
        """Host names written without wildcards (Host lines, then Match host / originalhost), in
        file order (what a picker offers)."""
        names: list[str] = []
        for raw in self.lines:
            match = _HOST.match(raw.split("#", 1)[0])
            if match:
                names += match.group(1).split()
        names += self._match_names
        return [n for n in dict.fromkeys(names) if not any(c in n for c in "*?!")]

    def matches(self, alias: str) -> bool:
        """True when a Host line other than a bare ``*``, or a Match host / originalhost
        criterion, names ``alias`` (patterns allowed)."""
        patterns = list(self._match_names)
        for raw in self.lines:
            match = _HOST.match(raw.split("#", 1)[0])
            if match:
                patterns += match.group(1).split()
        return any(p != "*" and not p.startswith("!") and fnmatch.fnmatchcase(alias, p) for p in patterns)

    def notes(self, alias: str) -> list[str]:
        """What the user should know about the options of ``alias``: the Match blocks that may
        have applied to it and were skipped."""
        names = [alias]
        try:
            names.append(self.lookup(alias).get("hostname", alias))
        except UserError:
            pass
        return [s.note() for s in self.skipped if s.may_apply_to(names)]

    def lookup(self, alias: str) -> dict:
        """paramiko's option dictionary for ``alias`` (all matching Host and honoured Match blocks applied)."""
        import paramiko

        try:
            config = paramiko.SSHConfig.from_text("\n".join(self._effective))
            return config.lookup(alias)
        except Exception as exc:  # paramiko raises ConfigParseError and others on bad lines
            raise UserError(f"The ssh configuration cannot be parsed: {exc}", self._bad_line() or self.path,
                            "Fix the line it names (see `man ssh_config`).") from exc

    def _bad_line(self) -> str | None:
        """``file:line`` of the first line paramiko cannot parse on its own, if one is."""
        import paramiko

        for index, line in enumerate(self._effective):
            try:
                paramiko.SSHConfig.from_text(line)
            except Exception:  # the line alone does not parse: that is the one to name
                path, number = self.origins[index]
                return f"{path}:{number}"
        return None

    def where(self, keyword: str, value: str) -> str:
        """``file:line`` of the first ``keyword value`` line (``file`` when there is none)."""
        for index, line in enumerate(self.lines):
            parsed = keyword_of(line)
            if parsed and parsed[0] == keyword and parsed[1].strip('"') == value:
                path, number = self.origins[index]
                return f"{path}:{number}"
        return str(self.path)

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
            port=self._port(alias, options),
            user=options.get("user", ""),
            auth=auth,
            key_file=os.path.expanduser(identity) if identity else None,
            proxy_jump=proxy,
        )

    def _port(self, alias: str, options: dict) -> int:
        text = str(options.get("port", "22")).strip()
        if not text.isdigit() or not 0 < int(text) < 65536:
            raise UserError(f"Port {text!r} of Host {alias!r} is not a TCP port number", self.where("port", text),
                            "Write a port between 1 and 65535 (SSH's default is 22) on that line.")
        return int(text)


def _safe_name(alias: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", alias).strip("-._")[:64] or "host"


def entry_from_ssh_config(alias: str, name: str | None = None, path: Path | None = None) -> HostEntry:
    """Shortcut: the HostEntry for ``alias`` in ``path`` (default ``~/.ssh/config``)."""
    return SshConfig.load(path).entry(alias, name)


def read_job(path: Path | None = None) -> Generator[Progress, None, SshConfig]:
    """:meth:`SshConfig.load` as a job: Includes on a slow disk must not freeze a window."""
    yield Progress(None, f"reading {path or default_path()}")
    return SshConfig.load(path)


def entry_job(config: SshConfig, alias: str, name: str | None = None
              ) -> Generator[Progress, None, tuple[HostEntry, list[str]]]:
    """The entry for ``alias`` and the notes to show with it, as a job (``CanonicalizeHostname``
    makes paramiko's lookup ask DNS)."""
    yield Progress(None, f"looking up {alias} in {config.path}")
    return config.entry(alias, name), config.notes(alias)
