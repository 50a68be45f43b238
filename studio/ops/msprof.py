"""msprof on an Ascend host around a run configuration or a command, the PROF_ folder brought
back (``studio profile run --host NAME (--config RUN | -- CMD) -o DIR``); or, with ``--collect``,
the configuration run as it is and the newest ``*_ascend_pt`` folder a PyTorch script wrote."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core import options
from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.options import option
from studio.ops.engine import is_here


HOST_GROUP = "on an Ascend host (msprof)"


@dataclass
class Request:
    """Profile the configuration ``config`` (in ``workspace``) or ``command`` on a host into ``output``.
    Each field is declared once with its ``studio profile run`` option (:mod:`studio.core.options`);
    the host itself is the command's ``--host``."""

    COMMAND = ("profile", "run")

    output: Path = option("-o", "--output", type=Path, metavar="DIR", parse=lambda value, _read: Path(value),
                          help="profile folder to write")
    config: str | None = option("--config", default=None, metavar="RUN", group=HOST_GROUP,
                                help="the run configuration msprof wraps (studio run --list)")
    workspace: Path | None = option("--workspace", default=None, type=Path, metavar="DIR", group=HOST_GROUP,
                                    help="workspace of --config (default: around .)")
    # The words after `--`: profile run's positional words (with --host they are the command).
    command: list[str] = option(dest="model", default_factory=list, nargs="*", metavar="-- CMD", trailing=True,
                                parse=lambda words, _read: list(words or []),
                                format=lambda words: ["--", *words] if words else [])
    msprof_options: list[str] = option("--msprof-option", default_factory=list, action="append",
                                       metavar="NAME=VALUE", group=HOST_GROUP,
                                       parse=lambda values, _read: list(values or []),
                                       help="msprof switch, e.g. ai-core=on, aic-metrics=Memory, task-time=l1 (repeat)")
    collect: str | None = option("--collect", default=None, metavar="FOLDER", group=HOST_GROUP,
                                 help="do not wrap in msprof: run the configuration and bring back the newest "
                                      "*_ascend_pt folder under FOLDER (PyTorch scripts that profile themselves)")

    def to_argv(self) -> list[str]:
        """The ``studio profile run`` arguments of this request (the host is ``--host``)."""
        return options.to_argv(self)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Request:
        """The request the command line's parsed arguments describe."""
        return options.from_args(cls, args)

    def run_config(self, host: str | None):
        """The run configuration this request names, or one made of its command."""
        return run_config(self.config, self.workspace, self.command, host)


def run_config(name: str | None, workspace: Path | None, command: list[str], host: str | None):
    """The configuration ``name`` of the workspace around ``workspace`` (checked against
    ``host``), or a configuration running ``command`` on ``host``."""
    from studio.runs.config import RunConfig, find_config, find_workspace

    if name and command:
        raise UserError("Give --config or a command after --, not both", "--config", "Drop one of them.")
    if name:
        config = find_config(find_workspace(workspace), name)
        if not config.is_local and config.target != host:
            raise UserError(f"Run configuration {config.name!r} runs on {config.target!r}, not {host!r}",
                            "--host", f"Use --host {config.target}, or edit the configuration.")
        return config
    if not command:
        raise UserError("What should run on the host?", "--config / -- CMD",
                        "Give --config RUN, or the command after --: studio profile run --host NAME -o DIR -- ./main")
    return RunConfig("command", shlex.join(command), target=host)


@dataclass
class Result:
    """The profile brought back (:class:`~studio.ops.msprof_host.HostProfile`)."""

    profile: object
    name: str

    def to_json(self) -> dict:
        p = self.profile
        return {"folder": str(p.folder), "remote": p.remote, "host": p.where, "command": p.command,
                "exported": p.exported, "files": p.files, "bytes": p.bytes, "npu_smi_samples": p.npu_smi_samples}

    def text(self) -> str:
        p = self.profile
        return (f"profile of {self.name} on {p.where}: {p.files} files ({p.bytes / 2**20:.1f} MiB) in {p.folder}"
                + (" (exported with msprof --export=on)" if p.exported else "")
                + (f"; {p.npu_smi_samples} npu-smi readings as counter tracks" if p.npu_smi_samples else ""))


def prepare(request: Request, where: str | None):
    """The run configuration ``request`` profiles on ``where`` (a host is required)."""
    if is_here(where):
        raise UserError("--config profiles on a host", "--host", "Add --host NAME.")
    return request.run_config(where)


def run(request: Request, where: str | None, context, cancel: CancelToken | None = None, config=None
        ) -> Generator[Progress, None, Result]:
    """Profile on the host ``where``; ``config`` is the request's configuration when the caller
    already resolved it (and uploaded its deployment first)."""
    from studio.core.output_lock import output_lock
    from studio.runs.where import target_for_config
    from studio.targets.transfer.fetch import folder_fetcher
    from studio.tools.profiler.msprof_cmd import MsprofOptions
    from studio.ops.msprof_host import collect_on_host, profile_on_host

    config = config or prepare(request, where)
    with output_lock(request.output, "profile"), target_for_config(context, config) as target:
        fetch = folder_fetcher(target)
        if request.collect:
            result = yield from collect_on_host(target, config, request.collect, request.output, cancel, fetch)
        else:
            result = yield from profile_on_host(target, config, request.output,
                                                MsprofOptions.from_strings(request.msprof_options), cancel, fetch)
    return Result(result, config.name)
