"""The SSH Target against a real sshd: quoting, streaming, exit codes, cancel, connection loss."""

from __future__ import annotations

import os
from pathlib import Path
import threading
import time

import pytest

from studio.core.errors import Cancelled, RemoteError, UserError
from studio.core.jobs import CancelToken
from studio.targets.base import collect
from studio.targets.ssh import SshTarget, remote_command

AWKWARD = ["a b", "it's", 'say "hi"', "$(touch INJECTED)", "; rm -rf x", "two\nlines", "naïve ü 模型", "*", ""]


@pytest.fixture
def executor(sshd_host):
    entry, known = sshd_host
    with SshTarget(entry, known) as ex:
        yield ex


def test_awkward_arguments_exit_code_and_streams(executor, tmp_path):
    status, lines = collect(executor.run(
        ["python3", "-c", "import sys; print('<ARG>'.join(sys.argv[1:])); print('warn', file=sys.stderr); sys.exit(5)",
         *AWKWARD], cwd=str(tmp_path)))
    assert status == 5
    # (a printable separator: a host's output lines come without control characters, see studio.core.printable)
    assert "\n".join(l.text for l in lines if l.stream == "stdout").split("<ARG>") == AWKWARD
    assert [l.text for l in lines if l.stream == "stderr"] == ["warn"]
    assert not (tmp_path / "INJECTED").exists()


def test_output_streams_before_the_command_ends(executor, tmp_path):
    go_on = tmp_path / "go-on"  # the command ends only once this exists: no clock involved
    script = (f"echo first; i=0; until [ -e '{go_on}' ]; do sleep 0.05; i=$((i+1)); "
              "if [ $i -gt 1200 ]; then echo gave-up; break; fi; done; echo second")  # bounded: never hangs
    job = executor.run(["sh", "-c", script])
    first = next(job)
    assert first.text == "first"  # arrived while the command still waits: not buffered until exit
    go_on.touch()
    assert [line.text for line in job] == ["second"]


def test_env_setup_cwd_and_realpath_on_the_host(executor, tmp_path):
    toolkit = tmp_path / "cann dir"
    toolkit.mkdir()
    (toolkit / "set_env.sh").write_text("export ASCEND_OPP_PATH=\"$(pwd)/opp\"\n")
    (tmp_path / "work").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "work")
    executor.toolkit = str(toolkit)
    status, lines = collect(executor.run(["sh", "-c", 'echo "$ASCEND_OPP_PATH"'], cwd=str(tmp_path / "work"),
                                         env_setup=executor.toolkit_setup()))
    assert status == 0 and lines[0].text.endswith("/opp")
    assert executor.realpath(str(tmp_path / "alias")) == str((tmp_path / "work").resolve())
    with pytest.raises(UserError, match="Cannot resolve"):
        executor.realpath(str(tmp_path / "absent" / "deeper"))


def _remote_pids(executor, marker: str) -> list[str]:
    _, out, _ = executor.connection.run(["pgrep", "-f", marker])
    return out.decode().split()


def test_cancel_kills_the_remote_process_and_its_children(executor):
    # Unique per run: other test runs on the same machine must not be counted as survivors.
    seconds = 300 + os.getpid() % 50_000
    marker = f"studio-cancel-test-{seconds}"
    token = CancelToken()
    job = executor.run(["sh", "-c", f"sleep {seconds} & exec -a {marker} sleep {seconds + 1}", marker],
                       cancel=token)
    threading.Timer(0.5, token.cancel).start()
    with pytest.raises(Cancelled):
        collect(job, token)
    for _ in range(40):
        if not _remote_pids(executor, f"sleep {seconds}|{marker}"):
            break
        time.sleep(0.05)
    assert _remote_pids(executor, f"sleep {seconds}|{marker}") == []


def test_connection_loss_is_a_clear_error(tmp_path, private_sshd):
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts

    server = private_sshd
    entry = HostEntry(name="flaky", host=server.host, port=server.port, user=server.user,
                      key_file=str(server.client_key))
    with SshTarget(entry, KnownHosts(read_only=[server.known_hosts], own=tmp_path / "own")) as ex:
        job = ex.run(["sh", "-c", "echo up; sleep 30"])
        assert next(job).text == "up"
        server.kill_sessions()  # the session's sshd and the command die
        with pytest.raises(RemoteError, match="connection to .* was lost"):
            for _ in job:
                pass


def test_remote_command_shape():
    assert remote_command(["ls", "a b"]) == "echo $$; exec ls 'a b'"
    assert remote_command(["atc", "--model=x y"], "/w", ". /t/set_env.sh") == \
        "echo $$; . /t/set_env.sh && cd /w && exec atc '--model=x y'"
    # " && " inside a quoted argument is part of that argument: the exec goes before the command
    assert remote_command(["sh", "-c", "[ a ] && [ b ]; echo done"], "/w") == \
        "echo $$; cd /w && exec sh -c '[ a ] && [ b ]; echo done'"


def test_an_argument_holding_and_and_runs_whole_on_the_host(sshd_host):
    from studio.core.jobs import run_job

    entry, known = sshd_host
    target = SshTarget(entry, known)
    try:
        lines = []
        # an "exec" slipped in after the quoted " && " would replace the inner shell: no "done"
        status = run_job(target.run(["sh", "-c", "true && true; echo done"]),
                         on_progress=lambda step: lines.append(step.message))
    finally:
        target.close()
    assert status == 0 and "done" in lines


def test_proxy_jump_through_another_host_entry(sshd_host):
    from studio.remote.hosts import HostEntry

    entry, known = sshd_host
    jump = HostEntry(name="bastion", host=entry.host, port=entry.port, user=entry.user, key_file=entry.key_file)
    inner = HostEntry(name="inner", host=entry.host, port=entry.port, user=entry.user, key_file=entry.key_file,
                      proxy_jump="bastion")
    from studio.remote.context import HostContext
    from studio.remote.hosts import HostStore

    store = HostStore(Path("/nonexistent/hosts.toml"))  # in memory: never saved
    store.put(jump)
    with SshTarget(inner, HostContext(store=store, known_hosts=known)) as ex:
        status, lines = collect(ex.run(["sh", "-c", 'echo "via $SSH_CONNECTION"']))
        assert status == 0 and lines[0].text.startswith("via 127.0.0.1")
        assert ex.connection._jump is not None and ex.connection._jump.alive
