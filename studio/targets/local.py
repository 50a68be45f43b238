"""Commands in a local subprocess, with the same contract as on an SSH host."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
from collections.abc import Generator

from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.targets.base import LineSplitter, OutputLine, Target, refuse_nul, shell_command
from studio.targets.files import local_copy_atomic


class LocalTarget(Target):
    """Runs commands on this machine; the process gets its own group so cancel stops its children."""

    name = "local"

    def __init__(self, toolkit: str | None = None, work_root: str | None = None):
        self.toolkit = toolkit
        self._work_root = work_root  # None: Studio's data folder

    def run(self, argv: list[str], cwd: str | None = None, env_setup: str | None = None,
            cancel: CancelToken | None = None) -> Generator[OutputLine, None, int]:
        refuse_nul(argv, cwd, env_setup)
        if env_setup:  # the set-up line needs a shell; the command stays quoted word by word
            command = ["bash", "-c", shell_command(argv, None, env_setup)]
        else:
            command = [str(a) for a in argv]
        try:
            proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except FileNotFoundError as exc:
            raise UserError(f"Program not found: {command[0]}", cwd or os.getcwd(),
                            "Install it or give its full path.") from exc
        except NotADirectoryError as exc:
            raise UserError("The working folder does not exist", cwd, "Give an existing folder.") from exc
        selector = selectors.DefaultSelector()
        splitters = {}
        try:
            for stream, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
                os.set_blocking(pipe.fileno(), False)
                selector.register(pipe, selectors.EVENT_READ, stream)
                splitters[stream] = LineSplitter()
            while selector.get_map():
                if cancel is not None:
                    cancel.raise_if_cancelled()
                for key, _ in selector.select(timeout=0.05):
                    data = os.read(key.fileobj.fileno(), 65536)
                    if not data:
                        selector.unregister(key.fileobj)
                        lines = splitters[key.data].flush()
                    else:
                        lines = splitters[key.data].feed(data)
                    for line in lines:
                        yield OutputLine(None, line, key.data)
            while proc.poll() is None:  # the pipes closed; the process may still be exiting
                if cancel is None:
                    proc.wait()
                elif cancel.wait(0.02):
                    cancel.raise_if_cancelled()
            return proc.returncode
        finally:
            selector.close()
            if proc.poll() is None:
                _kill_group(proc)
            proc.stdout.close()
            proc.stderr.close()

    def realpath(self, path: str) -> str:
        return os.path.realpath(os.path.expanduser(path))

    def run_script(self, script: str, timeout: float | None = 60) -> tuple[int, bytes, bytes]:
        try:
            done = subprocess.run(["sh", "-c", script], stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired as exc:
            raise UserError(f"A check on this computer did not finish within {timeout:.0f} s", "sh",
                            "Check that the disk and the toolkit folder respond.") from exc
        return done.returncode, done.stdout, done.stderr

    def run_detached(self, script: str) -> None:
        subprocess.Popen(["sh", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)

    def work_root(self) -> str:
        if self._work_root:
            return self._work_root
        from studio.core.paths import data_dir

        return str(data_dir() / "work")

    def put(self, local: Path, path: str, cancel: CancelToken | None = None, mode: int | None = None
            ) -> Generator[Progress, None, None]:
        yield Progress(0.0, f"copying {Path(local).name} into {Path(path).parent}")
        local_copy_atomic(Path(local), Path(path), None, lambda: cancel is not None and cancel.cancelled)
        if mode is not None:
            os.chmod(path, mode)
        yield Progress(1.0, f"copied {Path(local).name}")

    def get(self, path: str, local: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, None]:
        yield Progress(None, f"copying {Path(path).name} to {local}")
        local_copy_atomic(Path(path), Path(local), None, lambda: cancel is not None and cancel.cancelled)
        yield Progress(1.0, f"copied {Path(local).name}")

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        Path(path).write_bytes(data)


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=1.0)
            return
        except subprocess.TimeoutExpired:
            continue
