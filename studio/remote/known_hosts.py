"""Host-key verification against OpenSSH ``known_hosts`` files, with the line that matched.

Studio reads the user's ``~/.ssh/known_hosts`` (never writes it) and keeps its own file in the
user config folder, where ``trust`` appends. Hashed entries (``|1|salt|hash``), comma-separated
host lists, ``[host]:port`` forms and ``*``/``?`` patterns are understood; ``@revoked`` lines
reject a key, ``@cert-authority`` lines are skipped.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError


def fingerprint(key_type: str, key_blob: bytes) -> str:
    """OpenSSH's SHA256 fingerprint, as ``ssh-keygen -lf`` prints it."""
    digest = base64.b64encode(hashlib.sha256(key_blob).digest()).decode("ascii").rstrip("=")
    return f"SHA256:{digest}"


def host_pattern(host: str, port: int) -> str:
    """How OpenSSH names a host in known_hosts: ``host`` on port 22, ``[host]:port`` otherwise."""
    return host if port == 22 else f"[{host}]:{port}"


class UnknownHostKey(UserError):
    """The host's key is in no known_hosts file; the user must confirm the fingerprint first."""

    def __init__(self, host_name: str, address: str, key_type: str, key_blob: bytes, fix: str):
        self.key_type, self.key_blob = key_type, key_blob
        self.fingerprint = fingerprint(key_type, key_blob)
        super().__init__(f"The host key of {address} is not known yet ({key_type} {self.fingerprint})",
                         host_name, fix)


class HostKeyChanged(UserError):
    """The host presented a key different from the one recorded: refuse, it may be an attack."""

    def __init__(self, address: str, key_type: str, key_blob: bytes, file: Path, line: int,
                 known_type: str | None = None):
        self.fingerprint = fingerprint(key_type, key_blob)
        self.file, self.line = file, line
        was = f"; only a {known_type} key is known for it" if known_type and known_type != key_type else ""
        super().__init__(
            f"The host key of {address} has CHANGED (now {key_type} {self.fingerprint}{was}). Someone could be "
            "intercepting the connection, or the server was reinstalled",
            f"{file}:{line}",
            f"Ask the server's administrator for its key fingerprint. Only if it matches, delete line {line} "
            f"of {file} and connect again to trust the new key.")


@dataclass
class KnownKey:
    """One known_hosts line that names a host."""

    file: Path
    line: int
    key_type: str
    key_blob: bytes
    revoked: bool = False


def _pattern_matches(pattern: str, name: str) -> bool:
    # OpenSSH patterns know only * and ?; "[" is literal (as in "[host]:port"), unlike fnmatch.
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern.lower())
    return re.fullmatch(regex, name.lower()) is not None


def _matches(host_field: str, candidates: list[str]) -> bool:
    if host_field.startswith("|1|"):
        try:
            _, _, salt, hashed = host_field.split("|", 3)
            salt_bytes, want = base64.b64decode(salt), base64.b64decode(hashed)
        except (ValueError, base64.binascii.Error):
            return False
        return any(hmac.compare_digest(hmac.new(salt_bytes, c.encode(), hashlib.sha1).digest(), want)
                   for c in candidates)
    positive = False
    for pattern in host_field.split(","):
        negate = pattern.startswith("!")
        pattern = pattern[1:] if negate else pattern
        if any(_pattern_matches(pattern, c) for c in candidates):
            if negate:
                return False
            positive = True
    return positive


class KnownHosts:
    """The known_hosts files Studio checks, and the one it writes to."""

    def __init__(self, read_only: list[Path] | None = None, own: Path | None = None):
        from studio.core.paths import config_dir

        self.read_only = [Path.home() / ".ssh" / "known_hosts"] if read_only is None else list(read_only)
        self.own = Path(own) if own is not None else config_dir() / "known_hosts"

    def files(self) -> list[Path]:
        return [*self.read_only, self.own]

    def lookup(self, host: str, port: int) -> list[KnownKey]:
        """Every line, in every file, that names ``host`` on ``port``."""
        candidates = [host_pattern(host, port)]
        found: list[KnownKey] = []
        for file in self.files():
            try:
                text = file.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for number, raw in enumerate(text.splitlines(), start=1):
                parts = raw.strip().split()
                if not parts or parts[0].startswith("#"):
                    continue
                revoked = parts[0] == "@revoked"
                if parts[0].startswith("@"):
                    if not revoked:
                        continue  # @cert-authority: certificates are not supported
                    parts = parts[1:]
                if len(parts) < 3 or not _matches(parts[0], candidates):
                    continue
                try:
                    blob = base64.b64decode(parts[2], validate=True)
                except (ValueError, base64.binascii.Error):
                    continue
                found.append(KnownKey(file, number, parts[1], blob, revoked))
        return found

    def verify(self, host_name: str, host: str, port: int, key_type: str, key_blob: bytes) -> KnownKey:
        """Accept the key if a known_hosts line records it; raise UnknownHostKey or HostKeyChanged."""
        address = host_pattern(host, port)
        known = self.lookup(host, port)
        for entry in known:
            if entry.revoked and entry.key_blob == key_blob:
                raise UserError(f"The host key of {address} is marked @revoked", f"{entry.file}:{entry.line}",
                                "Do not connect; ask the server's administrator for its current key.")
        for entry in known:
            if not entry.revoked and entry.key_type == key_type and entry.key_blob == key_blob:
                return entry
        for entry in known:
            if not entry.revoked and entry.key_type == key_type:
                raise HostKeyChanged(address, key_type, key_blob, entry.file, entry.line)
        for entry in known:
            # Known by a key of another type, and it no longer offers that one: as for OpenSSH
            # (which asks for the known type first, see connection.prefer_known_key_types), the
            # identity changed — never a "new" key to trust on sight.
            if not entry.revoked:
                raise HostKeyChanged(address, key_type, key_blob, entry.file, entry.line, entry.key_type)
        raise UnknownHostKey(host_name, address, key_type, key_blob,
                             f"Check the fingerprint with the server's administrator, then run "
                             f"`studio ssh trust {host_name}` (or accept it in the Hosts panel).")

    def known_types(self, host: str, port: int) -> list[str]:
        """The key types recorded for ``host``:``port`` (not revoked), in file order."""
        return list(dict.fromkeys(k.key_type for k in self.lookup(host, port) if not k.revoked))

    def trust(self, host: str, port: int, key_type: str, key_blob: bytes) -> Path:
        """Record a key the user accepted, in Studio's own known_hosts file."""
        self.own.parent.mkdir(parents=True, exist_ok=True)
        line = f"{host_pattern(host, port)} {key_type} {base64.b64encode(key_blob).decode('ascii')}\n"
        with open(self.own, "a", encoding="utf-8") as handle:
            handle.write(line)
        return self.own
