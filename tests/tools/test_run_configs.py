"""Run configurations: stored in studio.toml, validated, run here with streamed output, exit code, cancel."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from studio.runs.where import local_target
from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, run_job
from studio.runs.config import RunConfig, delete_config, find_config, load_configs, save_config
from studio.runs.runner import run_configuration
from studio.core.workspace import Workspace


def test_stored_in_studio_toml_and_read_back(tmp_path):
    ws = Workspace.create(tmp_path / "ws")
    save_config(ws, RunConfig("facemask", "./main '../data/a b.jpg'", target="npu-box",
                              workdir="/home/u/facemask/out", env={"ASCEND_GLOBAL_LOG_LEVEL": "1"},
                              toolkit="/usr/local/Ascend/ascend-toolkit/latest", upload="facemask"))
    save_config(ws, RunConfig("local", "echo hi"))
    text = ws.settings_path.read_text()
    assert "[[run]]" in text and 'ASCEND_GLOBAL_LOG_LEVEL = "1"' in text
    again = Workspace.open(ws.folder)
    configs = load_configs(again)
    assert [c.name for c in configs] == ["facemask", "local"]
    assert configs[0].env == {"ASCEND_GLOBAL_LOG_LEVEL": "1"} and configs[0].upload == "facemask"
    renamed = RunConfig("facemask-fused", configs[0].command, target="npu-box")
    save_config(again, renamed, replace="facemask")
    assert [c.name for c in load_configs(Workspace.open(ws.folder))] == ["facemask-fused", "local"]
    with pytest.raises(UserError, match="exists already"):
        save_config(again, RunConfig("local", "true"), replace="facemask-fused")
    delete_config(again, "local")
    with pytest.raises(UserError, match="Known: facemask-fused"):
        find_config(Workspace.open(ws.folder), "local")


@pytest.mark.parametrize("config, match", [
    (RunConfig("x", ""), "command line is empty"),
    (RunConfig("x", "echo 'open"), "cannot be parsed"),
    (RunConfig("x", "true", env={"1BAD": "v"}), "not a valid environment variable"),
    (RunConfig(" ", "true"), "needs a name"),
])
def test_validation(config, match):
    with pytest.raises(UserError, match=match):
        config.validate()


def test_runs_here_with_env_workdir_and_exit_code(tmp_path):
    work = tmp_path / "work dir"
    work.mkdir()
    config = RunConfig("t", 'echo "$GREETING from $(pwd)"; echo oops >&2; exit 3', env={"GREETING": "hello 'x'"})
    lines = []
    outcome = run_job(run_configuration(config, local_target(), str(work)), on_progress=lambda p: lines.append(p.message))
    assert outcome.exit_code == 3 and not outcome.ok and outcome.duration_s >= 0
    assert f"hello 'x' from {work}" in outcome.output and "oops" in outcome.output
    assert lines[0].startswith("$ cd ") and outcome.output == lines[1:]


def test_cancel_kills_the_process_group(tmp_path):
    pid_file = tmp_path / "child.pid"
    config = RunConfig("t", f"sleep 60 & echo $! > {pid_file}; echo started; wait")
    cancel = CancelToken()
    seen = threading.Event()

    def progress(step):
        if step.message == "started":
            seen.set()
            cancel.cancel()

    with pytest.raises(Cancelled):
        run_job(run_configuration(config, local_target(), str(tmp_path), cancel=cancel), cancel, progress)
    assert seen.is_set()
    child = int(pid_file.read_text())
    for _ in range(50):  # the group got SIGTERM; give the child a moment to go
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the app's child process survived the cancel")


def test_cli_run(tmp_path, capsys):
    from studio.cli import main

    ws = Workspace.create(tmp_path / "ws")
    (ws.folder / "app").mkdir()
    save_config(ws, RunConfig("hello", "echo hi from $(basename $(pwd)); exit 4", workdir="app"))
    assert main(["run", "hello", "--workspace", str(ws.folder)]) == 4
    captured = capsys.readouterr()
    assert "hi from app" in captured.out and "exit code 4" in captured.err
    assert main(["run", "hello", "--workspace", str(ws.folder), "--json"]) == 4
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 4 and data["output"] == ["hi from app"]
    assert main(["run", "--list", "--workspace", str(ws.folder)]) == 0
    assert "hello" in capsys.readouterr().out
    assert main(["run", "nope", "--workspace", str(ws.folder)]) == 2
    assert "Known: hello" in capsys.readouterr().err
