"""The Target contract: where an engine runs — this computer or an SSH host.

Whether the command runs in a local subprocess or on an SSH host, callers write the same code::

    work = target.workdir("atc/20260101-120000-net")
    yield from target.put(model, f"{work}/net.onnx", cancel)
    status = run_job(target.run(["atc", "--model", f"{work}/net.onnx"], cwd=work,
                                env_setup=target.toolkit_setup()))
    yield from target.get(f"{work}/net.om", Path("out/net.om"), cancel)

``run`` is a job generator: it yields :class:`OutputLine` (a :class:`~studio.core.jobs.Progress` whose
message is one line of output, tagged ``stdout`` or ``stderr``) and returns the exit status.
Closing the generator or cancelling the token stops the process *and its children*. ``put`` and
``get`` copy one file under a temporary name and rename it into place, so a cancelled or cut
copy never leaves a file that looks complete. ``key`` is the job key (``host:NAME`` or
``local``): jobs with the same key run one at a time.
"""

from __future__ import annotations

import codecs
import shlex
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress

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


def workdir_script(root: str, relative: str) -> str:
    """``mkdir -p ROOT/REL && cd ROOT/REL && pwd -P``, quoted; a root starting ``~`` is the home folder."""
    if root == "~" or root.startswith("~/"):
        # "~" is only expanded unquoted: go home first, then use a quoted relative path.
        rel = shlex.quote(f"{root[2:]}/{relative}" if root != "~" else relative)
        return f"cd && mkdir -p -- {rel} && cd -- {rel} && pwd -P"
    path = shlex.quote(f"{root.rstrip('/')}/{relative}")
    return f"mkdir -p -- {path} && cd -- {path} && pwd -P"


def refuse_nul(argv: list[str], cwd: str | None = None, env_setup: str | None = None) -> None:
    """A UserError when the command holds a NUL: no argument, path or SSH command string can carry
    one (sshd drops the whole connection on it, which would read as a lost link)."""
    for label, value in [*((f"argument {i + 1}", a) for i, a in enumerate(argv)), ("working folder", cwd),
                         ("set-up line", env_setup)]:
        if value is not None and "\0" in str(value):
            shown = str(value).replace("\0", "\\0")[:120]
            raise UserError(f"The command's {label} holds a NUL character (\\0), which no program can receive",
                            shown, "Remove the NUL from it.")


def shell_command(argv: list[str], cwd: str | None = None, env_setup: str | None = None,
                  exec_last: bool = False) -> str:
    """``env_setup && cd CWD && ARGV`` with every argument quoted (the string a shell will run);
    with ``exec_last`` the command replaces the shell (``... && exec ARGV``)."""
    if not argv:
        raise ValueError("an empty command")
    refuse_nul(argv, cwd, env_setup)
    parts = [env_setup] if env_setup else []
    if cwd:
        parts.append(f"cd {shlex.quote(str(cwd))}")
    parts.append(("exec " if exec_last else "") + shlex.join(str(a) for a in argv))
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


class Target:
    """Runs commands and keeps files somewhere; subclasses say where."""

    #: Shown in messages ("local", "npu-box").
    name = "local"
    #: CANN toolkit folder where it runs, if known (for :meth:`toolkit_setup`).
    toolkit: str | None = None
    #: True for this computer (paths on it are the user's own paths).
    is_local = True

    @property
    def key(self) -> str:
        """The job key: jobs with the same key run one at a time (``host:NAME``, ``local``)."""
        return "local"

    @property
    def where(self) -> str:
        """How messages name this place: "this computer" or the host's name."""
        return "this computer"

    def run_script(self, script: str, timeout: float | None = 60) -> tuple[int, bytes, bytes]:
        """Run a short ``sh`` script and wait: (exit status, stdout, stderr) — for checks, not jobs."""
        raise NotImplementedError

    def run_detached(self, script: str) -> None:
        """Start a ``sh`` script and return without waiting for it (clean-ups whose end nobody
        needs to see); its output is dropped. It survives the caller (``nohup``, own session)."""
        raise NotImplementedError

    def put(self, local: Path, path: str, cancel: CancelToken | None = None, mode: int | None = None
            ) -> Generator[Progress, None, None]:
        """Copy the local file ``local`` to ``path`` here, atomically (temporary name, then rename);
        ``mode`` sets its permissions (default: the local file's, without group/world write)."""
        raise NotImplementedError

    def get(self, path: str, local: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, None]:
        """Copy ``path`` from here to the local file ``local``, atomically."""
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        """True when ``path`` is a file or folder here."""
        raise NotImplementedError

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a small file here (logs kept next to a run)."""
        raise NotImplementedError

    def work_root(self) -> str:
        """The folder work folders are made under (made on first use)."""
        raise NotImplementedError

    def workdir_script(self, relative: str) -> str:
        """The ``sh`` line that creates ``work_root()/relative`` and prints its symlink-free path.

        ``pwd -P`` prints what ``realpath`` would (ATC and msprof reject paths that go through
        symlinks), in the same round trip as the ``mkdir``.
        """
        return workdir_script(self.work_root(), relative)

    def workdir(self, relative: str) -> str:
        """Create ``work_root()/relative`` and return its path with every symlink resolved."""
        status, out, err = self.run_script(self.workdir_script(relative), timeout=30)
        path = out.decode("utf-8", "replace").strip()
        if status != 0 or not path:
            from studio.core.errors import UserError

            raise UserError(f"Cannot create the work folder on {self.where}: "
                            f"{err.decode('utf-8', 'replace').strip()}", f"{self.name}:{self.work_root()}",
                            "Check the free disk space and the folder's permissions.")
        return path

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
    from studio.core.jobs import run_job

    lines: list[OutputLine] = []
    status = run_job(job, cancel, on_progress=lambda step: lines.append(step))
    return status, lines


def stream(job: Generator[OutputLine, None, int], keep: int | None = None,
           show: Callable[[str], Progress | None] | None = None) -> Generator[Progress, None, tuple[int, list[str]]]:
    """Pass a ``run`` job's lines on as progress; return (exit status, its lines).

    ``keep`` bounds the lines returned (the last ones) for commands that print without end;
    ``show`` turns a line into the progress passed on (None: the line is not shown). The job is
    closed however this ends, so a cancel kills the process group on the target.
    """
    lines: list[str] = []
    try:
        while True:
            try:
                step = next(job)
            except StopIteration as done:
                return int(done.value), lines
            lines.append(step.message)
            if keep is not None and len(lines) > keep:
                del lines[: len(lines) - keep]
            shown = Progress(None, step.message) if show is None else show(step.message)
            if shown is not None:
                yield shown
    finally:
        job.close()
