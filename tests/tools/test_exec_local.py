"""The local Target: same contract as over SSH (quoting, streams, exit codes, cancel, realpath)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken
from studio.targets.base import collect, env_setup_line, shell_command
from studio.targets.local import LocalTarget

AWKWARD = ["a b", "it's", 'say "hi"', "$(touch INJECTED)", "; rm -rf x", "two\nlines", "naïve ü 模型", "*"]


def test_awkward_arguments_arrive_intact_and_streams_are_tagged(tmp_path):
    status, lines = collect(LocalTarget().run(
        ["python3", "-c", "import sys; print('\\x00'.join(sys.argv[1:])); print('warn', file=sys.stderr); sys.exit(4)",
         *AWKWARD], cwd=str(tmp_path)))
    assert status == 4
    out = "\n".join(l.text for l in lines if l.stream == "stdout")
    assert out.split("\x00") == AWKWARD
    assert [l.text for l in lines if l.stream == "stderr"] == ["warn"]
    assert not (tmp_path / "INJECTED").exists()


def test_env_setup_line_is_sourced_before_the_command(tmp_path):
    toolkit = tmp_path / "my toolkit"
    toolkit.mkdir()
    (toolkit / "set_env.sh").write_text("export ASCEND_TOOLKIT_HOME='from set_env'\n")
    executor = LocalTarget(toolkit=str(toolkit))
    assert executor.toolkit_setup() == env_setup_line(str(toolkit))
    status, lines = collect(executor.run(["sh", "-c", 'echo "$ASCEND_TOOLKIT_HOME"; pwd'], cwd=str(tmp_path),
                                         env_setup=executor.toolkit_setup()))
    assert status == 0 and [l.text for l in lines] == ["from set_env", str(tmp_path)]
    assert shell_command(["ls", "a b"], "/x y", ". /t/set_env.sh") == ". /t/set_env.sh && cd '/x y' && ls 'a b'"


def test_cancel_kills_the_process_group(tmp_path):
    pid_file = tmp_path / "child.pid"
    token = CancelToken()
    threading.Timer(0.3, token.cancel).start()
    start = time.monotonic()
    with pytest.raises(Cancelled):
        collect(LocalTarget().run(["sh", "-c", f"sleep 30 & echo $! > '{pid_file}'; wait"], cancel=token), token)
    assert time.monotonic() - start < 20  # out long before the 30 s sleep ends, even on a loaded machine
    child = int(pid_file.read_text())
    for _ in range(50):  # the grandchild goes with its group
        if not os.path.exists(f"/proc/{child}") or "Z" in open(f"/proc/{child}/stat").read().split()[2]:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the child process survived cancel")


def test_missing_program_and_realpath(tmp_path):
    with pytest.raises(UserError, match="Program not found"):
        collect(LocalTarget().run(["no-such-program-xyz"]))
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert LocalTarget().realpath(str(tmp_path / "link")) == str((tmp_path / "real").resolve())
