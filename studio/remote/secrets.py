"""Passwords and key passphrases: the OS keyring when there is one, otherwise asked each time.

Nothing secret is ever written to a Studio file or to the log. On headless Linux ``keyring`` has
no backend (its ``fail.Keyring``, priority 0, raises ``NoKeyringError``): then the secret is asked
for on every connection and forgotten afterwards.

:func:`make_ask_secret` builds the ``ask_secret(kind, prompt)`` callback that
:func:`studio.remote.connection.connect` takes: it looks in the keyring first and falls back
to a prompt function (``getpass`` for the CLI, a dialog for the GUI), then offers the answer to the
keyring. :func:`forget` deletes what a failed login proved wrong.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

SERVICE = "studio-workbench"

Prompt = Callable[[str, str], "str | None"]


def _keyring():
    """The keyring module when a usable backend exists, else None."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken backend configuration must not stop a login
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return keyring


def keyring_available() -> bool:
    """True when secrets can be kept in an OS keyring here."""
    return _keyring() is not None


def account(kind: str, prompt: str) -> str:
    """The keyring account a secret is filed under: its kind and what it opens."""
    return f"{kind}:{prompt}"


def load(kind: str, prompt: str) -> str | None:
    """The stored secret, or None (no keyring, nothing stored, or the keyring failed)."""
    ring = _keyring()
    if ring is None:
        return None
    try:
        return ring.get_password(SERVICE, account(kind, prompt))
    except Exception as exc:  # locked or unreachable keyring: ask instead
        log.warning("keyring lookup failed (%s); asking instead", type(exc).__name__)
        return None


def store(kind: str, prompt: str, secret: str) -> bool:
    """Keep ``secret`` in the keyring; False when there is none (it is then simply not kept)."""
    ring = _keyring()
    if ring is None:
        return False
    try:
        ring.set_password(SERVICE, account(kind, prompt), secret)
        return True
    except Exception as exc:
        log.warning("keyring refused to store a %s (%s)", kind, type(exc).__name__)
        return False


def forget(kind: str, prompt: str) -> None:
    """Remove a stored secret (after the server rejected it)."""
    ring = _keyring()
    if ring is None:
        return
    try:
        ring.delete_password(SERVICE, account(kind, prompt))
    except Exception:  # nothing stored, or the keyring is locked: nothing to forget
        pass


class SecretAsker:
    """The ``ask_secret`` callback: keyring first, then ``prompt``; remembers what it handed out.

    After a failed login call :meth:`forget_used` so a wrong stored password is not reused.
    """

    def __init__(self, prompt: Prompt, remember: bool = True):
        self._prompt = prompt
        self._remember = remember
        self._used: list[tuple[str, str]] = []
        self._asked: dict[tuple[str, str], str] = {}

    def __call__(self, kind: str, prompt: str) -> str | None:
        key = (kind, prompt)
        secret = load(kind, prompt)
        if secret is None:
            secret = self._prompt(kind, prompt)
            if secret is None:
                return None
            self._asked[key] = secret
        self._used.append(key)
        return secret

    def commit(self) -> None:
        """The login worked: keep the secrets typed in (in the keyring only)."""
        if self._remember:
            for (kind, prompt), secret in self._asked.items():
                store(kind, prompt, secret)
        self._asked.clear()

    def forget_used(self) -> None:
        """The login failed: drop every secret handed out from the keyring."""
        for kind, prompt in self._used:
            forget(kind, prompt)
        self._used.clear()
        self._asked.clear()


def cli_prompt(kind: str, prompt: str) -> str | None:
    """Ask on the terminal without echo; None when there is no terminal to ask on."""
    import getpass
    import sys

    if not sys.stdin.isatty():
        return None
    try:
        return getpass.getpass(f"{prompt}: ")
    except (EOFError, KeyboardInterrupt):
        return None


def cli_asker() -> SecretAsker:
    """The CLI's ``ask_secret``: keyring, else getpass on the terminal."""
    return SecretAsker(cli_prompt)
