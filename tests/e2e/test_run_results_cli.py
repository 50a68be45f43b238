"""`studio run NAME`: the metrics the app printed as a table, and the outputs it names fetched back
beside the project — here and on the real loopback sshd."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

from standins import write_host
from test_cli import run_studio

from studio.runs.config import RunConfig, save_config
from studio.core.workspace import Workspace

APP = """
import numpy as np, os
os.makedirs("result", exist_ok=True); os.makedirs("out", exist_ok=True)
for i, (dice, iou) in enumerate([(0.93, 0.87), (0.5, 0.3333)], start=1):
    open(f"result/{i:04d}.png", "wb").write(bytes([137, 80, 78, 71, i]))
    print(f"image: {i:04d}.png, dice: {dice}, iou: {iou}")
np.save("out/mask.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
print("Cross Valid dice coeff is: 0.715")
"""


def _workspace(tmp_path: Path, target: str, workdir: Path) -> Workspace:
    workdir.mkdir(parents=True)
    (workdir / "main.py").write_text(APP)
    ws = Workspace.create(tmp_path / "ws")
    save_config(ws, RunConfig("seg", f"{shlex.quote(sys.executable)} main.py", target=target, workdir=str(workdir),
                              fetch=["result/*.png", "out/*.npy", "logs/*.txt"]))
    return ws


def _check(result, ws: Workspace, workdir: Path) -> None:
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [r["values"] for r in data["metrics"]["rows"]] == [{"dice": 0.93, "iou": 0.87}, {"dice": 0.5, "iou": 0.3333},
                                                              {"Cross Valid dice coeff": 0.715}]
    folder = Path(data["results"])
    assert folder.parent == ws.folder / "runs" and folder.name.startswith("seg_")
    fetched = sorted(Path(f).relative_to(folder).as_posix() for f in data["fetched"])
    assert fetched == ["out/mask.npy", "result/0001.png", "result/0002.png"]  # logs/*.txt matched nothing
    for name in fetched:
        assert (folder / name).read_bytes() == (workdir / name).read_bytes()
    assert np.array_equal(np.load(folder / "out/mask.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_a_local_run_prints_its_metrics_and_brings_its_outputs_beside_the_project(tmp_path, studio_home):
    workdir = tmp_path / "app"
    ws = _workspace(tmp_path, "local", workdir)
    _check(run_studio("run", "seg", "--workspace", str(ws.folder), "--json", home=studio_home), ws, workdir)
    text = run_studio("run", "seg", "--workspace", str(ws.folder), home=studio_home)
    assert "image 0001.png" in text.stdout and "mean" in text.stdout and "fetched 3 file(s)" in text.stdout


def test_a_run_on_the_host_fetches_from_its_working_folder_there(sshd, tmp_path, studio_home):
    workdir = tmp_path / "remote app 'x'"  # spaces and a quote: the folder is quoted, the globs are not
    write_host(studio_home, sshd)
    ws = _workspace(tmp_path, "box", workdir)
    _check(run_studio("run", "seg", "--workspace", str(ws.folder), "--json", home=studio_home), ws, workdir)


@pytest.mark.parametrize("pattern", ["../up/*", "out/*.npy;id"])
def test_unsafe_fetch_patterns_in_studio_toml_are_refused_before_the_run(tmp_path, studio_home, pattern):
    ws = Workspace.create(tmp_path / "ws")
    ws.set_table("run", [{"name": "seg", "command": "touch ran", "fetch": [pattern]}])
    ws.save()
    result = run_studio("run", "seg", "--workspace", str(ws.folder), home=studio_home)
    assert result.returncode == 2 and "fetch pattern" in result.stderr and "studio.toml" in result.stderr
    assert not (ws.folder / "ran").exists()


def _old_glob_host(tmp_path: Path):
    """A private sshd whose login shell globs as bash before 5.2 and dash do (``.?`` matches ``..``)."""
    from sshd_server import running_sshd

    env = tmp_path / "old_glob.sh"
    env.write_text("shopt -u globskipdots 2>/dev/null || true\n")
    return running_sshd(tmp_path / "sshd", [f"SetEnv BASH_ENV={env}"])


@pytest.mark.parametrize("on_host", [False, True])
@pytest.mark.parametrize("pattern", [".?/secret.txt", ".?/.?/.?/.?/.?/.?/.?/.?/.?/.?/.?/.?" + "/tmp_target.txt",
                                     "app/.*/secret.txt"])
def test_dot_led_wildcards_in_fetch_are_refused_at_load_with_file_and_line(tmp_path, studio_home, pattern, on_host):
    top = tmp_path / "host"
    (top / "app").mkdir(parents=True)
    (top / "secret.txt").write_text("the host's secret")
    ws = Workspace.create(tmp_path / "ws")
    ws.set_table("run", [{"name": "seg", "command": "touch ran", "target": "box" if on_host else "local",
                          "workdir": str(top / "app"), "fetch": ["result/*.png", pattern]}])
    ws.save()
    line = next(n for n, text in enumerate((ws.folder / "studio.toml").read_text().splitlines(), 1)
                if text.startswith("fetch"))
    if on_host:
        with _old_glob_host(tmp_path) as server:
            write_host(studio_home, server)
            result = run_studio("run", "seg", "--workspace", str(ws.folder), home=studio_home)
    else:
        result = run_studio("run", "seg", "--workspace", str(ws.folder), home=studio_home)  # sh here is dash or bash
    landed = [p for p in (ws.folder / "runs").rglob("*") if p.is_file()] if (ws.folder / "runs").exists() else []
    assert landed == [] and not (top / "app" / "ran").exists(), (result.stdout, result.stderr, landed)
    assert result.returncode == 2, result.stderr
    assert f"studio.toml, line {line}" in result.stderr and "can match '..'" in result.stderr


def test_outputs_behind_a_symlinked_folder_on_the_host_are_not_fetched(sshd, tmp_path, studio_home):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0")
    workdir = tmp_path / "app"
    ws = _workspace(tmp_path, "box", workdir)
    (workdir / "etcl").symlink_to(outside)  # a deployed project may carry such a link
    ws.set_table("run", [{**ws.data["run"][0], "fetch": ["result/*.png", "etcl/*", "etcl/../app/out/*.npy"]}])
    ws.save()
    write_host(studio_home, sshd)
    result = run_studio("run", "seg", "--workspace", str(ws.folder), home=studio_home)
    assert result.returncode == 2 and "'..'" in result.stderr  # etcl/.. is refused at load
    ws.set_table("run", [{**ws.data["run"][0], "fetch": ["result/*.png", "etcl/*"]}])
    ws.save()
    result = run_studio("run", "seg", "--workspace", str(ws.folder), "--json", home=studio_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    folder = Path(data["results"])
    every = sorted(p.relative_to(ws.folder / "runs").as_posix() for p in (ws.folder / "runs").rglob("*") if p.is_file())
    assert every == [f"{folder.name}/result/0001.png", f"{folder.name}/result/0002.png"]
    assert "symlinked folder" in result.stderr and "etcl/passwd" in result.stderr
    assert data["not_fetched"] == ["etcl/passwd"]


def test_a_runs_folder_that_is_a_symlink_receives_nothing(tmp_path, studio_home):
    workdir = tmp_path / "app"
    ws = _workspace(tmp_path, "local", workdir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws.folder / "runs").symlink_to(elsewhere)
    result = run_studio("run", "seg", "--workspace", str(ws.folder), home=studio_home)
    assert list(elsewhere.iterdir()) == []
    assert result.returncode != 0 and "runs folder is a symlink" in result.stderr


def test_escape_sequences_in_a_host_s_output_never_reach_the_terminal(sshd, tmp_path, studio_home):
    write_host(studio_home, sshd)
    ws = Workspace.create(tmp_path / "ws")
    # retitles the window, clears the screen, colours, a reset (ESC c), a NUL: on both streams
    command = ("printf '\\033]0;pwned\\007\\033[2J\\033[Hhello\\tthere\\n'; "
               "printf '\\033[31mred\\033[0m \\033cafter\\000\\n' >&2; exit 3")
    ws.set_table("run", [{"name": "loud", "command": command, "target": "box"}])
    ws.save()
    result = run_studio("run", "loud", "--workspace", str(ws.folder), home=studio_home)
    shown = result.stdout + result.stderr
    assert result.returncode == 3, shown
    assert "hello\tthere" in shown and "red after" in shown  # the words stay, tab and newlines too
    assert not any(c in shown for c in "\x1b\x07\x00\x9b"), repr(shown)
