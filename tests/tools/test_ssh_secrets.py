"""Secrets: kept in an OS keyring when there is one, asked each time otherwise, never on disk."""

from __future__ import annotations

import subprocess

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail

from studio.remote import secrets
from studio.remote.connection import AuthFailed, connect_remembering
from studio.remote.hosts import HostEntry
from studio.remote.known_hosts import KnownHosts

PASSPHRASE = "correct horse 🐎 battery"


class MemoryKeyring(KeyringBackend):
    priority = 1

    def __init__(self):
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.items.get((service, username))

    def set_password(self, service, username, password):
        self.items[(service, username)] = password

    def delete_password(self, service, username):
        self.items.pop((service, username), None)


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)


@pytest.fixture
def no_keyring():
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def passphrase_host(sshd, tmp_path):
    """The test sshd plus a passphrase-protected client key that it accepts."""
    key = tmp_path / "locked_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-f", str(key)], check=True)
    authorized = sshd.root / "authorized_keys"
    authorized.write_text(authorized.read_text() + key.with_suffix(".pub").read_text())
    entry = HostEntry(name="locked", host=sshd.host, port=sshd.port, user=sshd.user, key_file=str(key))
    return entry, KnownHosts(read_only=[sshd.known_hosts], own=tmp_path / "own")


def _all_bytes_under(folder) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_passphrase_asked_once_then_kept_in_the_keyring_only(passphrase_host, memory_keyring, studio_home):
    entry, known = passphrase_host
    asked = []
    asker = secrets.SecretAsker(lambda kind, prompt: asked.append((kind, prompt)) or PASSPHRASE)
    connect_remembering(entry, known, asker).close()
    assert [k for k, _ in asked] == ["passphrase"] and str(entry.key_file) in asked[0][1]
    assert PASSPHRASE in memory_keyring.items.values()
    again = secrets.SecretAsker(lambda kind, prompt: pytest.fail("asked although the keyring has it"))
    connect_remembering(entry, known, again).close()
    assert PASSPHRASE.encode() not in _all_bytes_under(studio_home)


def test_a_wrong_stored_secret_is_forgotten(passphrase_host, memory_keyring):
    entry, known = passphrase_host
    secrets.store("passphrase", f"Passphrase for key {entry.key_file}", "wrong")
    with pytest.raises(AuthFailed, match="passphrase does not open"):
        connect_remembering(entry, known, secrets.SecretAsker(lambda k, p: None))
    assert memory_keyring.items == {}


def test_without_a_keyring_the_secret_is_asked_every_time(passphrase_host, no_keyring, studio_home):
    entry, known = passphrase_host
    assert not secrets.keyring_available()
    asked = []
    for _ in range(2):
        asker = secrets.SecretAsker(lambda kind, prompt: asked.append(kind) or PASSPHRASE)
        connect_remembering(entry, known, asker).close()
    assert asked == ["passphrase", "passphrase"]
    assert PASSPHRASE.encode() not in _all_bytes_under(studio_home)


def test_declining_to_answer_is_a_clear_error(passphrase_host, no_keyring):
    from studio.core.errors import UserError

    entry, known = passphrase_host
    with pytest.raises(UserError, match="protected by a passphrase"):
        connect_remembering(entry, known, secrets.SecretAsker(lambda k, p: None))
