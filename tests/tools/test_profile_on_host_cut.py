"""A connection killed while a PROF_ folder comes back from the real sshd: nothing partial stays
here, and the next run (a new connection) brings the whole folder."""

from __future__ import annotations

import pytest
from standins import make_standin_toolkit
from test_deploy_sync import cut_connection  # noqa: F401 (a fixture)

from studio.core.errors import RemoteError, UserError
from studio.core.jobs import run_job
from studio.runs.config import RunConfig
from studio.targets.ssh import SshTarget
from studio.targets.transfer.fetch import folder_fetcher
from studio.ops.msprof_host import profile_on_host


# Killing the connection mid-download also ends paramiko's own read-ahead thread with an EOFError
# it does not catch: that is the library's thread reporting the cut this test makes on purpose.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_connection_killed_mid_prof_download_leaves_nothing_then_the_next_run_completes(
        sshd_host, tmp_path, ascend_fixtures, cut_connection):  # noqa: F811
    entry, known = sshd_host
    entry.toolkit = str(make_standin_toolkit(tmp_path / "cann", ascend_fixtures, STANDIN_MSPROF_PAD_MB="24"))
    real = tmp_path / "host 'root'"
    real.mkdir()
    (tmp_path / "root-link").symlink_to(real)  # msprof refuses a symlinked --output: it must be resolved
    entry.extra["deploy_root"] = str(tmp_path / "root-link")
    config = RunConfig("app", "echo app ran", target="testhost")
    out = tmp_path / "local out"
    killed = cut_connection(0.4)
    with SshTarget(entry, known) as target:
        with pytest.raises((RemoteError, UserError)) as info:
            run_job(profile_on_host(target, config, out, fetch=folder_fetcher(target)))
    assert killed, "the connection was cut mid-download"
    assert "connection" in str(info.value).lower()
    assert not out.exists() or list(out.iterdir()) == []  # no PROF_ folder, no staging folder
    cut_connection(2.0)  # disarmed: never reached
    with SshTarget(entry, known) as target:
        result = run_job(profile_on_host(target, config, out, fetch=folder_fetcher(target)))
    proms = sorted(p for p in real.rglob("PROF_*") if p.is_dir())
    remote = next(p for p in proms if p.name == result.folder.name)
    files = [p for p in remote.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) > 24 << 20
    assert all((result.folder / p.relative_to(remote)).read_bytes() == p.read_bytes() for p in files)
    assert [p.name for p in out.iterdir()] == [result.folder.name]
