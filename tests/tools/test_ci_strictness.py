"""On CI, a test that needs a real sshd or the shared real files fails when they are missing.

``.ci/run`` installs openssh-server; if that install fails, the ~90 tests against a real server
must not vanish as skips and leave a green run behind.
"""

from __future__ import annotations

import pytest
import sshd_server
from shared_fixtures import missing_fixtures


@pytest.fixture
def no_sshd(monkeypatch):
    monkeypatch.setattr(sshd_server, "SSHD", "/nonexistent/sbin/sshd")
    monkeypatch.delenv("STUDIO_SHARED", raising=False)


def test_missing_sshd_fails_on_ci(no_sshd, monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="openssh-server.*required on CI"):
        sshd_server.require_sshd()


def test_missing_sshd_skips_on_a_developer_machine(no_sshd, monkeypatch):
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="openssh-server"):
        sshd_server.require_sshd()


def test_missing_fixtures_fail_on_ci(monkeypatch):
    monkeypatch.delenv("STUDIO_SHARED", raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required here"):
        missing_fixtures("no shared folder")
