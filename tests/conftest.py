"""Shared test set-up: no display, an isolated STUDIO_HOME per test, the real Ascend fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("STUDIO_SHARED", REPO.parent / "shared"))
ASCEND_FIXTURES = SHARED / "fixtures" / "ascend"


@pytest.fixture(autouse=True)
def studio_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own per-user folder, so no test reads or writes the real settings."""
    home = tmp_path_factory.mktemp("studio_home")
    monkeypatch.setenv("STUDIO_HOME", str(home))
    return home


def fixtures_required() -> bool:
    """True where missing shared fixtures are an error rather than a reason to skip.

    A developer without ../shared gets skips; CI (CI=true, as every CI service sets it) and anyone
    who pointed STUDIO_SHARED somewhere must not pass by silently skipping the tests on real files.
    """
    ci = os.environ.get("CI", "").strip().lower()
    return bool(os.environ.get("STUDIO_SHARED")) or ci not in ("", "0", "false", "no")


def missing_fixtures(reason: str) -> None:
    """Skip a test for missing shared files, or fail it where they are required (see above)."""
    if fixtures_required():
        pytest.fail(f"{reason} — required here because STUDIO_SHARED or CI is set", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def ascend_fixtures() -> Path:
    """The real files from Ascend's repositories (../shared/fixtures/ascend)."""
    if not ASCEND_FIXTURES.is_dir():
        missing_fixtures(f"real Ascend fixtures not found at {ASCEND_FIXTURES} "
                         "(set STUDIO_SHARED to the shared folder)")
    return ASCEND_FIXTURES


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """A real OpenSSH sshd on 127.0.0.1 (see tests/sshd_server.py); skipped where sshd is missing."""
    from sshd_server import sshd_missing_reason, start_sshd

    reason = sshd_missing_reason()
    if reason:
        pytest.skip(reason)
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def private_sshd(tmp_path):
    """A sshd of the test's own (for tests that kill its sessions); skipped where sshd is missing."""
    from sshd_server import sshd_missing_reason, start_sshd

    reason = sshd_missing_reason()
    if reason:
        pytest.skip(reason)
    server = start_sshd(tmp_path / "sshd")
    yield server
    server.stop()


@pytest.fixture
def sshd_host(sshd):
    """A HostEntry for the test sshd, and a KnownHosts that trusts it (nothing from ~/.ssh)."""
    from studio.tools.deploy.hosts import HostEntry
    from studio.tools.deploy.known_hosts import KnownHosts

    entry = HostEntry(name="testhost", host=sshd.host, port=sshd.port, user=sshd.user, auth="key",
                      key_file=str(sshd.client_key))
    return entry, KnownHosts(read_only=[sshd.known_hosts])
