"""Vendor tools on a target, one way: a :class:`ToolRun` and :func:`run_on_toolkit`.

A vendor tool (ATC, msame, ais_bench, msprof, an app dumping its tensors) runs on this computer or
on an Ascend host the same way: the work folder is made (symlink-free: ATC and msprof refuse paths
through links), the files it reads go up (``Target.put``: temporary name, then rename), the tool
runs after the toolkit's ``set_env.sh`` with every output line passed on as progress, its output
is kept beside it, and what it wrote comes back (``Target.get``, atomic). A failure is told one
way — what failed where with which exit code, the output's last lines, where the log is kept —
unless the tool explains its own codes (ATC's E-codes, msprof's messages).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress

NOT_FOUND = 127
PLOG_HINT = "logs are under ~/ascend/log/debug/plog/ on the host (set ASCEND_GLOBAL_LOG_LEVEL=1 for more)"


@dataclass
class ToolRun:
    """One run of a vendor tool: what goes up, the command, which exit codes pass, what comes back.

    Relative upload and output names are inside the work folder; absolute ones are used as they are.
    """

    tool: str                       # the program as messages name it ("msame", "ATC")
    argv: list[str] | Callable[[str | None], list[str]]  # or made from the work folder's path
    work: str | None = None         # a new work folder under the target's work root (e.g. "bench")
    cwd: str | None = None          # or a folder on the target that exists already
    uploads: list[tuple[Path, str]] = field(default_factory=list)   # (local file, name on the target)
    outputs: list[tuple[str, Path]] = field(default_factory=list)   # (name on the target, local file)
    accept: tuple[int, ...] | None = (0,)  # exit codes that pass; None: any (the caller judges the run)
    log: str | None = None          # the streamed output is kept in this file of the work folder
    env_setup: str | None = None    # None: the target's toolkit set_env.sh line
    before: str | None = None       # shell commands run first in the work folder (e.g. unpack the inputs)
    missing_fix: str | None = None  # what to do when the program is not on the target
    show: Callable[[str], Progress | None] | None = None  # a line -> the progress shown (None: hidden)
    keep: int | None = None         # lines kept for the outcome (the last ones); None: all
    explain: Callable[[ToolOutcome], UserError | None] | None = None  # the tool's own reading of a failure
    shown: str | None = None        # the command line as progress shows it (None: the argv, quoted)

    def argv_in(self, work: str | None) -> list[str]:
        """The command, once the work folder's path on the target is known."""
        return list(self.argv(work) if callable(self.argv) else self.argv)


@dataclass
class ToolOutcome:
    """What a run did: where, in which folder, its exit status and output lines, how long it took."""

    where: str
    work: str | None
    argv: list[str]
    status: int
    lines: list[str]
    command: str
    seconds: float
    fetched: list[Path] = field(default_factory=list)

    @property
    def output(self) -> str:
        """The output as one text (a newline after each line)."""
        return "".join(f"{line}\n" for line in self.lines)


def run_on_toolkit(run: ToolRun, target, cancel: CancelToken | None = None
                   ) -> Generator[Progress, None, ToolOutcome]:
    """Work folder -> put -> run under the toolkit -> fetch, once; a failure raises its UserError."""
    from studio.targets.base import stream

    where = getattr(target, "where", None) or getattr(target, "name", "local")
    work = run.cwd or (target.workdir(run.work) if run.work else None)
    _make_folders(target, work, [name for _local, name in run.uploads], where)
    for index, (local, name) in enumerate(run.uploads):
        if cancel is not None:
            cancel.raise_if_cancelled()
        remote = on_target(work, name)
        yield Progress(index / len(run.uploads), f"uploading {Path(local).name} to {where}:{remote}")
        yield from target.put(Path(local), remote, cancel)
    argv = run.argv_in(work)
    line = shlex.join(argv)
    yield Progress(None, f"$ {run.shown or line}")
    setup = run.env_setup if run.env_setup is not None else target.toolkit_setup()
    started = time.monotonic()
    command = argv if not run.before else ["sh", "-c", f'{run.before} && exec "$@"', "sh", *argv]
    # with ``before``, the tool replaces the shell (a cancel kills its process group)
    status, lines = yield from stream(target.run(command, cwd=work, env_setup=setup, cancel=cancel),
                                      keep=run.keep, show=run.show)
    outcome = ToolOutcome(where, work, argv, status, lines, line, round(time.monotonic() - started, 3))
    if run.log and work:
        keep_log(target, f"{work}/{run.log}", outcome.output)
    if run.accept is not None and status not in run.accept:
        raise (run.explain(outcome) if run.explain else None) or tool_failure(run, outcome)
    for name, local in run.outputs:
        yield from target.get(on_target(work, name), Path(local), cancel)
        outcome.fetched.append(Path(local))
    return outcome


def _make_folders(target, work: str | None, names: list[str], where: str) -> None:
    """The folders the uploads go into (``data/x/00000.bin`` needs ``data/x``), made in one round
    trip: a put writes one file and makes no folder."""
    folders = sorted({on_target(work, name).rpartition("/")[0] for name in names if "/" in name.strip("/")})
    if not folders:
        return
    status, _out, err = target.run_script(f"mkdir -p -- {' '.join(shlex.quote(f) for f in folders)}", timeout=30)
    if status != 0:
        raise UserError(f"Cannot create the upload folders on {where}: {err.decode('utf-8', 'replace').strip()}",
                        f"{where}:{folders[0]}", "Check that the work folder may be written, then run again.")


def on_target(work: str | None, name: str) -> str:
    """``name`` inside the work folder (an absolute name stays as it is)."""
    return name if name.startswith("/") or not work else f"{work}/{name}"


def tool_failure(run: ToolRun, outcome: ToolOutcome) -> UserError:
    """The one failure text: not found (with the tool's install hint) or failed with its exit code."""
    tail = "\n".join(outcome.lines[-8:])
    program = outcome.argv[0] if outcome.argv else run.tool
    where = f"{outcome.where}: {outcome.command}"
    if outcome.status == NOT_FOUND or f"{program}: command not found" in tail or "No module named ais_bench" in tail:
        return UserError(f"{run.tool} was not found on {outcome.where}", where,
                         run.missing_fix or f"Install {run.tool} on the host, or set the host's toolkit path so "
                                            "set_env.sh puts it on PATH.")
    kept = f"its output is kept in {outcome.work}/{run.log}; " if run.log and outcome.work else ""
    return UserError(f"{run.tool} failed on {outcome.where} with exit code {outcome.status}"
                     + (f":\n{tail}" if tail else ""), where, f"Read the output above; {kept}{PLOG_HINT}.")


def keep_log(target, path: str, text: str) -> None:
    """Leave the streamed output next to the run (best effort: a full disk does not fail the run)."""
    try:
        target.write_bytes(path, text.encode("utf-8"))
    except OSError:
        pass


def list_files(target, folder: str, depth: int | None = None, kind: str = "f", timeout: float = 60) -> list[str]:
    """The paths under ``folder`` on ``target`` (relative, sorted): files, or with ``kind="d"`` folders."""
    # Plain find (no -printf): busybox on RC boards has no -printf.
    limit = f" -maxdepth {depth} -mindepth 1" if depth else ""
    status, out, err = target.run_script(f"cd {shlex.quote(folder)} && find .{limit} -type {kind}", timeout=timeout)
    if status != 0:
        raise UserError(f"Cannot list {folder} on {target.where}: {err.decode('utf-8', 'replace').strip()}", folder,
                        "Check that the folder exists and is readable.")
    return sorted(line[2:] for line in out.decode("utf-8", "replace").splitlines() if line.startswith("./"))
