"""Shared test set-up: no display, an isolated STUDIO_HOME per test, the real Ascend fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Outside a test too (collection, session and module fixtures, the subprocesses they start) Studio
# keeps its per-user files in a folder of this run, never in the user's: the autouse fixture below
# gives each test its own on top. The user's STUDIO_HOME is kept for the corpus cache, which is
# meant to outlive a run (tests/corpus/conftest.py).
# setdefault: a test worker (pytest-xdist) inherits the first process's values, not its run folder.
os.environ.setdefault("STUDIO_TEST_USER_HOME", os.environ.get("STUDIO_HOME", ""))
_RUN_HOME = tempfile.mkdtemp(prefix="studio-test-home-")
os.environ["STUDIO_HOME"] = _RUN_HOME
atexit.register(shutil.rmtree, _RUN_HOME, True)
# One round of the roof measurement per process: tests check behaviour, the benchmarks the figures.
os.environ.setdefault("STUDIO_ROOF_ROUNDS", "1")

from shared_fixtures import ASCEND_FIXTURES, REPO, SHARED, fixtures_required, missing_fixtures  # noqa: F401,E402

# make_panel, make_panels, make_window and the GUI-thread garbage collection of GUI tests.
pytest_plugins = ["plugins.studio_panels"]


_CORPUS = Path(__file__).parent / "corpus"


def pytest_collection_modifyitems(config, items):
    """Groups for test workers (``make test`` runs pytest-xdist with ``--dist loadgroup``): a file's
    tests stay on one worker, so its module fixtures (a wheel built, the docs' commands run) are
    made once; every corpus case goes to one worker, since they share the models it fetches (two
    workers must not fetch into one folder at once, nor both write its results.json)."""
    for item in items:
        group = "corpus" if _CORPUS in item.path.parents else str(item.path)
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def studio_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own per-user folder, so no test reads or writes the real settings."""
    home = tmp_path_factory.mktemp("studio_home")
    monkeypatch.setenv("STUDIO_HOME", str(home))
    # The command line's one HostContext (hosts.toml, known hosts) lives for its process: a test
    # calling main() in-process gets its own, reading this test's folder, not an earlier test's.
    from studio.commands import _context

    monkeypatch.setattr(_context, "_context", None)
    return home


@pytest.fixture(autouse=True, scope="session")
def _no_stale_pyenv_lock():
    """A pyenv rehash lock left by a killed or frozen SSH login stalls every later login 60 s
    (see sshd_server): a janitor thread removes orphaned locks for the whole run."""
    from sshd_server import PyenvLockJanitor, remove_stale_pyenv_lock

    remove_stale_pyenv_lock()
    with PyenvLockJanitor():
        yield


@pytest.fixture(scope="session")
def ascend_fixtures() -> Path:
    """The real files from Ascend's repositories (../shared/fixtures/ascend)."""
    if not ASCEND_FIXTURES.is_dir():
        missing_fixtures(f"real Ascend fixtures not found at {ASCEND_FIXTURES} "
                         "(set STUDIO_SHARED to the shared folder)")
    return ASCEND_FIXTURES


@pytest.fixture(scope="session")
def real_profiles(ascend_fixtures) -> Path:
    """The real multi-rank profiles and memory files (fixtures/ascend/real: cluster_pytorch, memory, ...)."""
    path = ascend_fixtures / "real"
    if not (path / "cluster_pytorch").is_dir():
        missing_fixtures(f"real cluster profiles not found at {path / 'cluster_pytorch'}")
    return path


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """A real OpenSSH sshd on 127.0.0.1 (see tests/sshd_server.py); skipped where sshd is missing (a failure on CI)."""
    from sshd_server import running_sshd

    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture
def private_sshd(tmp_path):
    """A sshd of the test's own (for tests that kill its sessions); skipped where sshd is missing (a failure on CI)."""
    from sshd_server import running_sshd

    with running_sshd(tmp_path / "sshd") as server:
        yield server


@pytest.fixture
def sshd_host(sshd):
    """A HostEntry for the test sshd, and a KnownHosts that trusts it (nothing from ~/.ssh)."""
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts

    entry = HostEntry(name="testhost", host=sshd.host, port=sshd.port, user=sshd.user, auth="key",
                      key_file=str(sshd.client_key))
    return entry, KnownHosts(read_only=[sshd.known_hosts])


@pytest.fixture
def frozen_host(tmp_path):
    """(sshd, freeze()) — freeze() stops every process of the sshd's open connections: a host that
    goes silent mid-transfer (cancel and keepalive tests)."""
    from sshd_server import require_sshd, start_sshd

    require_sshd()
    server = start_sshd(tmp_path / "sshd")
    stopped: list[int] = []

    def freeze() -> None:
        for pid in server.session_pids():
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            except ProcessLookupError:  # a short-lived command (the listing) ended meanwhile
                pass

    yield server, freeze
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    server.stop()  # kills every process of the sessions, stopped or not
    assert not [pid for pid in stopped if os.path.exists(f"/proc/{pid}")], "a frozen sshd process outlived the test"


def _user_files() -> dict[str, int]:
    """Every file in the user's own Studio config and cache folders (the corpus aside): path -> mtime."""
    import platformdirs

    user_home = os.environ.get("STUDIO_TEST_USER_HOME")
    roots = ([Path(user_home) / "config", Path(user_home) / "cache"] if user_home else
             [Path(platformdirs.user_config_dir("studio", appauthor=False)),
              Path(platformdirs.user_cache_dir("studio", appauthor=False))])
    found = {}
    for root in roots:
        for path in root.rglob("*") if root.is_dir() else ():
            if "corpus" not in path.relative_to(root).parts[:1] and path.is_file():
                try:
                    found[str(path)] = path.stat().st_mtime_ns
                except OSError:
                    pass
    return found


def pytest_sessionstart(session):
    session.config._user_files = _user_files()


def pytest_sessionfinish(session, exitstatus):
    """On CI (where nothing else runs beside the tests), a test that wrote into the user's own Studio
    folders fails the run: tests keep to their temporary folders."""
    if os.environ.get("CI", "").strip().lower() in ("", "0", "false", "no"):
        return
    before, after = getattr(session.config, "_user_files", {}), _user_files()
    changed = sorted(p for p in after if before.get(p) != after[p])
    if changed:
        print(f"\nerror: the tests wrote into the user's Studio folders: {changed[:10]}")
        session.exitstatus = 1
