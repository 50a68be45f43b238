"""Commands in a local subprocess, with the same contract as on an SSH host."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
from collections.abc import Generator

from studio.errors import UserError
from studio.jobs import CancelToken
from studio.tools.exec.executor import Executor, LineSplitter, OutputLine, shell_command


class LocalExecutor(Executor):
    """Runs commands on this machine; the process gets its own group so cancel stops its children."""

    name = "local"

    def __init__(self, toolkit: str | None = None):
        self.toolkit = toolkit

    def run(self, argv: list[str], cwd: str | None = None, env_setup: str | None = None,
            cancel: CancelToken | None = None) -> Generator[OutputLine, None, int]:
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
