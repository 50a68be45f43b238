"""The Executor contract: run a command, stream its output lines, return its exit code.

Whether the command runs in a local subprocess or on an SSH host, callers write the same code::

    status = run_job(executor.run(["atc", "--model", path], cwd=work, env_setup=executor.toolkit_setup()))

``run`` is a job generator: it yields :class:`OutputLine` (a :class:`~studio.jobs.Progress` whose
message is one line of output, tagged ``stdout`` or ``stderr``) and returns the exit status.
Closing the generator or cancelling the token stops the process *and its children*.
"""

from __future__ import annotations

import codecs
import shlex
from collections.abc import Generator
from dataclasses import dataclass

from studio.jobs import CancelToken, Progress

DEFAULT_TOOLKIT = "/usr/local/Ascend/ascend-toolkit/latest"


@dataclass(frozen=True)
class OutputLine(Progress):
    """One line a command printed (without its newline); ``stream`` is "stdout" or "stderr"."""

    stream: str = "stdout"

    @property
    def text(self) -> str:
        return self.message


def env_setup_line(toolkit: str | None) -> str | None:
    """The line that loads CANN's environment: ``. <toolkit>/set_env.sh``, quoted.

    ``.`` rather than ``source``: the login shell may be dash, where only ``.`` exists. The
    toolkit's set_env.sh is named explicitly because ``~/.bashrc`` returns early for
    non-interactive shells on Debian-like systems, so exports made there do not reach us.
    """
    if not toolkit:
        return None
    return f". {shlex.quote(toolkit.rstrip('/') + '/set_env.sh')}"


def shell_command(argv: list[str], cwd: str | None = None, env_setup: str | None = None) -> str:
    """``env_setup && cd CWD && ARGV`` with every argument quoted (the string a shell will run)."""
    if not argv:
        raise ValueError("an empty command")
    parts = [env_setup] if env_setup else []
    if cwd:
        parts.append(f"cd {shlex.quote(str(cwd))}")
    parts.append(shlex.join(str(a) for a in argv))
    return " && ".join(parts)


class LineSplitter:
    """Turns byte chunks into complete text lines (UTF-8, bad bytes replaced, CR LF folded)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""

    def feed(self, data: bytes) -> list[str]:
        text = self._partial + self._decoder.decode(data)
        *lines, self._partial = text.split("\n")
        return [line[:-1] if line.endswith("\r") else line for line in lines]

    def flush(self) -> list[str]:
        text = self._partial + self._decoder.decode(b"", final=True)
        self._partial = ""
        return [text] if text else []


class Executor:
    """Runs commands somewhere; subclasses say where."""

    #: Shown in messages ("local", "npu-box").
    name = "local"
    #: CANN toolkit folder where it runs, if known (for :meth:`toolkit_setup`).
    toolkit: str | None = None

    def run(self, argv: list[str], cwd: str | None = None, env_setup: str | None = None,
            cancel: CancelToken | None = None) -> Generator[OutputLine, None, int]:
        """Run ``argv`` (each word quoted), stream its lines, return its exit status."""
        raise NotImplementedError

    def realpath(self, path: str) -> str:
        """The absolute path with every symlink resolved (msprof rejects symlinked paths)."""
        raise NotImplementedError

    def toolkit_setup(self) -> str | None:
        """The CANN environment line for this place, or None when no toolkit is configured."""
        return env_setup_line(self.toolkit)

    def close(self) -> None:
        """Let go of connections (nothing to do locally)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def collect(job: Generator[OutputLine, None, int], cancel: CancelToken | None = None
            ) -> tuple[int, list[OutputLine]]:
    """Drive a ``run`` job to the end: (exit status, every line) — for tests and small commands."""
    from studio.jobs import run_job

    lines: list[OutputLine] = []
    status = run_job(job, cancel, on_progress=lambda step: lines.append(step))
    return status, lines
