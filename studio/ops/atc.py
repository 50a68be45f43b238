"""ATC on a target — this computer or an Ascend host over SSH — as one operation (no Qt):
``studio convert MODEL --atc [--host NAME]`` and the Converter's ATC run are both :func:`run`.

The same :class:`ConvertOptions` that builds the ``atc`` command (``atc_command``) is turned into
a plan for a work folder (:func:`~studio.tools.convert.atc_command.remote_plan`); this job

1. checks that the target's CANN toolkit has ``atc`` and creates the work folder —
   ``<work root>/atc/<stamp>-<stem>``, where the work root is the host's ``deploy_root`` when it
   has one, else ``~/.studio`` on a host and Studio's data folder here — resolved to its physical
   path (``pwd -P``, as realpath does: ATC and msprof reject paths that go through symlinks);
   the toolkit check and the folder are one round trip (ATC's own messages for a missing toolkit);
2. hands the rest to :func:`~studio.ops.toolkit.run_on_toolkit`: the model, weight, AIPP and
   fusion switch files go in, the argv runs after ``. <toolkit>/set_env.sh`` with every output
   line streamed as Progress, and ``atc.log`` (the streamed output) is kept in the work folder;
3. on failure raises :class:`AtcFailed` with ATC's codes explained and the log's path;
   on success copies the .om back to the output path (``Target.get``, atomic).

Cancel stops ``atc`` and its children (the target kills the process group) and leaves no partial
.om. The work folder stays with its log.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from studio.core.errors import ToolUnavailable, UserError
from studio.core.jobs import CancelToken, Progress
from studio.targets import DEFAULT_TOOLKIT, Target, env_setup_line
from studio.tools.convert.atc_log import AtcMessage, parse_atc_output, succeeded
from studio.ops.toolkit import ToolRun, run_on_toolkit
from studio.tools.convert.options import ConvertOptions

PLOG_DIR = "~/ascend/log/debug/plog"
_NO_SET_ENV, _NO_ATC, _NO_DIR = 3, 4, 5  # exit codes of the preparation script


class AtcFailed(UserError):
    """ATC ran and failed (the CLI exits 1 for it, 2 for the other UserErrors)."""

    def __init__(self, what: str, where: str, fix: str, result: AtcResult):
        self.result = result
        super().__init__(what, where, fix)


@dataclass
class AtcResult:
    """What a run did: where, the argv, exit code, output and findings, the .om it produced."""

    host: str
    work_dir: str
    argv: list[str]
    returncode: int
    output: str
    local_om: Path | None = None
    messages: list[AtcMessage] = field(default_factory=list)

    # studio.core.serial: the ``studio convert --target --json`` keys ("output" is the .om fetched back)
    __json_rename__ = {"local_om": "output", "output": "atc_output"}
    __json_extra__ = ("log", "ok")

    @property
    def log(self) -> str:
        """The streamed output kept next to the run."""
        return f"{self.work_dir}/atc.log"

    @property
    def ok(self) -> bool:
        errors = any(m.level == "error" for m in self.messages)
        return self.returncode == 0 and (succeeded(self.output) or not errors)


def work_dir_name(model: Path, now: float | None = None) -> str:
    """``<YYYYmmdd-HHMMSS>-<model stem>``: one folder per run, sorted by time."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{Path(model).stem}"


def toolkit_check_script(toolkit: str | None) -> str:
    """Exit 0 printing atc's path; 3 when set_env.sh is missing; 4 when atc is not found.

    Without a toolkit folder (this computer, nothing configured) atc must be on PATH already.
    """
    if not toolkit:
        return f"command -v atc || exit {_NO_ATC}"
    set_env = shlex.quote(toolkit.rstrip("/") + "/set_env.sh")
    return (f"[ -r {set_env} ] || exit {_NO_SET_ENV}; . {set_env} >/dev/null 2>&1; "
            f"command -v atc || exit {_NO_ATC}")


def prepare_script(target: Target, toolkit: str | None, name: str) -> str:
    """One round trip: check the toolkit, create the work folder, print atc's path and the folder.

    Exit 3: no set_env.sh; 4: no atc after sourcing it; 5: the folder cannot be made.
    """
    return f"{toolkit_check_script(toolkit)} && {{ {target.workdir_script('atc/' + name)} || exit {_NO_DIR}; }}"


def _prepare(target: Target, toolkit: str | None, name: str) -> tuple[str, str]:
    status, out, err = target.run_script(prepare_script(target, toolkit, name), timeout=30)
    lines = out.decode("utf-8", "replace").splitlines()
    if target.is_local and not toolkit and status == _NO_ATC:
        raise ToolUnavailable("atc", "ATC (CANN toolkit) is not on PATH on this machine",
                              "Run it on an Ascend host with --host NAME (add one with `studio ssh add`), "
                              "source CANN's set_env.sh here, or copy the command (--print-command) to the host.")
    name_ = target.where
    fix = (f"Give the CANN toolkit folder (the one holding set_env.sh) with `studio ssh add {target.name} "
           f"--toolkit DIR` (or Edit… in the Hosts panel); `studio ssh test {target.name}` shows what the host has."
           if not target.is_local else "Give the CANN toolkit folder (the one holding set_env.sh).")
    if status == _NO_SET_ENV:
        raise UserError(f"No CANN toolkit at {toolkit} on {name_} (set_env.sh is missing)",
                        f"{target.name}:{toolkit}", fix)
    if status == _NO_ATC:
        raise UserError(f"atc is not on PATH on {name_} after sourcing {toolkit}/set_env.sh",
                        f"{target.name}:{toolkit}", "Install the CANN toolkit (with ATC) there, or " + fix[0].lower() + fix[1:])
    if status != 0 or len(lines) < 2:
        raise UserError(f"Cannot create the work folder on {name_}: {err.decode('utf-8', 'replace').strip()}",
                        target.name, "Check the free disk space and the permissions of the work root "
                        f"({target.work_root()}).")
    return lines[0].strip(), lines[-1].strip()


def _failure(result: AtcResult) -> AtcFailed:
    coded = [m for m in result.messages if m.code and m.level == "error"]
    first = coded[0] if coded else next((m for m in result.messages if m.level == "error"), None)
    what = f"ATC failed on {result.host} (exit {result.returncode})"
    if first is not None:
        what += f": {first.code + ' ' if first.code else ''}{first.text}"
        if first.meaning:
            what += f" — {first.meaning}"
    fix = first.fix if first is not None and first.fix else "Read the ATC output above."
    fix += f" The output is kept in {result.log} on {result.host}; ATC's plogs are in {PLOG_DIR}/."
    return AtcFailed(what, f"{result.host}:{result.work_dir}", fix, result)


def run_atc(options: ConvertOptions, target: Target, cancel: CancelToken | None = None
            ) -> Generator[Progress, None, AtcResult]:
    """Convert with ATC on ``target`` and bring the .om to ``options.output`` on this computer."""
    from studio.tools.convert.atc_command import remote_plan

    if options.output is None:
        options.output = Path(options.model).with_suffix("")
    for local in (options.model, options.weight, options.insert_op_conf, options.fusion_switch_file):
        if local is not None and not Path(local).is_file():
            raise UserError("The file does not exist", local, "Check the path (it is copied from this computer).")
    remote_plan(options, "/check")  # every ATC rule is checked before we connect
    toolkit = target.toolkit or (None if target.is_local else DEFAULT_TOOLKIT)
    if not target.is_local:
        yield Progress(None, f"connecting to {target.name} ({target.entry.address})")
    atc_path, work_dir = _prepare(target, toolkit, work_dir_name(options.model))
    yield Progress(None, f"atc on {target.where}: {atc_path}")
    argv, uploads, (remote_om, local_om) = remote_plan(options, work_dir)
    yield Progress(None, f"work folder {target.name}:{work_dir}")
    # ATC's exit code and its E-codes are judged below (exit 0 with errors and no success line fails too)
    run = ToolRun("ATC", argv, cwd=work_dir, uploads=list(uploads), accept=None, log="atc.log",
                  env_setup=env_setup_line(toolkit))
    done = yield from run_on_toolkit(run, target, cancel)
    result = AtcResult(target.name, work_dir, argv, done.status, done.output, None, parse_atc_output(done.output))
    if not result.ok:
        raise _failure(result)
    if not target.exists(remote_om):
        raise UserError(f"ATC reported success but wrote no {PurePosixPath(remote_om).name}",
                        f"{target.name}:{work_dir}", "Read the ATC output; check --output and the free disk space.")
    yield from target.get(remote_om, local_om, cancel)
    result.local_om = local_om
    return result


@dataclass
class Request:
    """Convert with ATC as ``options`` say; ``aipp_path``/``aipp_text``: the Converter's AIPP
    config, written here first (off the GUI thread) when the wizard made it."""

    options: ConvertOptions
    aipp_path: Path | None = None
    aipp_text: str | None = None


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None,
        target=None) -> Generator[Progress, None, AtcResult]:
    """ATC on the host ``where`` (None: this computer) or on ``target``; an :class:`AtcResult`
    (:class:`AtcFailed`, holding it, when ATC failed)."""
    from studio.runs.where import target_for_host
    from studio.tools.convert.convert import write_text_then

    target = target or target_for_host(context, where)
    return (yield from write_text_then(request.aipp_path, request.aipp_text,
                                       run_atc(request.options, target, cancel)))
