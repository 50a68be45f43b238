"""Profile a run configuration with msprof where a Target says, and bring the PROF_ folder back.

Steps (journey 2): check the NPU (``npu-smi info``), make a symlink-free output folder on the
host, run ``msprof --application=<the configuration's command> --output=<that folder>`` in the
configuration's working folder (its environment variables passed to msprof, which the app
inherits), find the PROF_ folder msprof reports, run ``msprof --export=on`` when the summaries are
not there yet, and download the folder into ``out`` — under a temporary name first, so a cut
connection or a cancel leaves nothing half-written, and the next run starts clean. msprof and
its export run as every vendor tool does (:func:`~studio.ops.toolkit.run_on_toolkit`); msprof's
own messages explain its failures.

For PyTorch-on-NPU scripts that write ``*_ascend_pt/ASCEND_PROFILER_OUTPUT`` themselves,
:func:`collect_on_host` runs the configuration as it is and downloads the newest such folder.
"""

from __future__ import annotations

import secrets
import shlex
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.ops.toolkit import ToolRun, list_files, run_on_toolkit
from studio.runs.config import RunConfig
from studio.targets.transfer.fetch import fetcher_for
from studio.tools.profiler.npu_smi import (INTERVAL_S, LOG_NAME, TIMEOUT_S, parse_log, sampler_script, smi_command,
                                           write_samples)
from studio.tools.profiler.msprof_cmd import (PLOG_DIR, MsprofOptions, command_line, explain_failure, export_argv,
                                              find_prof_folder, msprof_argv, needs_export)


@dataclass
class HostProfile:
    """Where a host profile came from and where it landed."""

    folder: Path  # the local copy (a PROF_ or *_ascend_pt folder)
    remote: str
    where: str
    command: str
    exported: bool = False
    files: int = 0
    bytes: int = 0
    output: list[str] = field(default_factory=list)
    npu_smi_samples: int = 0  # npu-smi readings (of all NPUs) written into the profile as counter tracks


def profile_on_host(target, config: RunConfig, out: Path, options: MsprofOptions | None = None,
                    cancel: CancelToken | None = None, fetch=None, npu_smi_interval: float | None = INTERVAL_S
                    ) -> Generator[Progress, None, HostProfile]:
    """Wrap ``config`` in msprof on ``target``; returns the downloaded PROF_ folder under ``out``.

    Every ``npu_smi_interval`` seconds of the run (None: never) ``npu-smi info`` is read in the
    same session, and the readings go into the downloaded folder as counter tracks
    (:mod:`~studio.tools.profiler.npu_smi`).

    ``fetch(remote, files, out, cancel)`` downloads a folder (a generator returning (folder, bytes));
    by default each file comes through ``target.get``. The callers pass the deployment's
    downloader for SSH hosts (tar and ``cat`` streams: much faster for big raw data).
    """
    config.validate()
    out = Path(out)
    setup = config.env_setup() or target.toolkit_setup()
    yield Progress(0.0, f"preparing the output folder on {target.where}")
    remote_out, cwd = _prepare(target, config, f"profiles/{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}")
    env = [f"{k}={v}" for k, v in config.env.items()]
    argv = (["env", *env] if env else []) + msprof_argv(config.command, remote_out, options)
    line = command_line(argv)
    # npu-smi answers first, in the same round trip (a failing driver is the usual cause of
    # msprof errors, and its own message is the clear one).
    # Each npu-smi is limited in time (a hung driver: exit 124, said as such, nothing left running).
    smi = smi_command(TIMEOUT_S)
    check = (f"{{ {smi} info >/dev/null 2>&1; r=$?; [ $r -eq 0 ] || {{ if [ $r -eq 124 ]; then "
             f"echo 'npu-smi info did not answer within {TIMEOUT_S:g} s (the NPU driver hangs?)'; "
             f"else {smi} info 2>&1; fi; echo {_NPU_MARK}; exit {_NPU_FAILED}; }}; }}")
    log = f"{remote_out}/{LOG_NAME}"
    if npu_smi_interval is not None:  # started once npu-smi answered; ends with msprof
        check += f" && {sampler_script(log, npu_smi_interval, TIMEOUT_S)}"
    # the exit status is judged here: npu-smi's marker first, then msprof's own messages
    run = ToolRun("msprof", argv, cwd=cwd, accept=None, env_setup=f"{setup} && {check}" if setup else check,
                  shown=f"{'cd ' + shlex.quote(cwd) + ' && ' if cwd else ''}{line}")
    done = yield from run_on_toolkit(run, target, cancel)
    status, lines = done.status, done.lines
    if status == _NPU_FAILED and lines and lines[-1] == _NPU_MARK:
        found = [x for x in lines[:-1] if x.strip()] or ["npu-smi: command not found (no NPU driver installed)"]
        raise explain_failure(target.where, "npu-smi info", found + ["npu-smi info failed"], status,
                              "/var/log/npu/slog/ (driver logs)", program="npu-smi")
    if status != 0:
        raise explain_failure(target.where, line, lines, status, _log_dir(config))
    prof = find_prof_folder(lines, remote_out)
    if prof is None:  # msprof said nothing usable: look in the output folder
        prof = find_prof_folder([], remote_out, list_files(target, remote_out, depth=1, kind="d"))
    if prof is None:
        raise UserError(f"msprof wrote no PROF_ folder on {target.where}", f"{target.where}: {line}",
                        "Check that the application ran (its output is above) and called aclInit; "
                        f"msprof's log is under {PLOG_DIR}.")
    exported = False
    # A stat (SFTP on a host: no shell start-up) answers the common case; only an older layout or
    # a collection without export needs the listing.
    if not target.exists(f"{prof}/mindstudio_profiler_output") and needs_export(list_files(target, prof)):
        export = export_argv(prof)
        done = yield from run_on_toolkit(ToolRun("msprof", export, accept=None, env_setup=setup), target, cancel)
        status, more = done.status, done.lines
        if status != 0:
            raise explain_failure(target.where, command_line(export), more, status, _log_dir(config))
        lines += more
        exported = True
    files = list_files(target, prof) if fetch is None else []
    folder, size = yield from fetcher_for(target, fetch)(prof, files, out, cancel)
    samples = _npu_smi_samples(target, log, folder) if npu_smi_interval is not None else 0
    count = sum(1 for p in folder.rglob("*") if p.is_file())
    return HostProfile(folder, prof, target.where, line, exported, count, size, lines, samples)


def _npu_smi_samples(target, log: str, folder: Path) -> int:
    """The sampler's readings, written into the downloaded ``folder``; how many there were."""
    status, out, _ = target.run_script(f"cat -- {shlex.quote(log)} 2>/dev/null", timeout=60)
    samples = parse_log(out.decode("utf-8", "replace")) if status == 0 else []
    write_samples(folder, samples)
    return len({s.time_ns for s in samples})  # readings, each of every NPU


def collect_on_host(target, config: RunConfig, folder: str, out: Path, cancel: CancelToken | None = None,
                    fetch=None, npu_smi_interval: float | None = INTERVAL_S) -> Generator[Progress, None, HostProfile]:
    """Run ``config`` as it is (a PyTorch script profiling itself) and download the newest
    ``*_ascend_pt`` folder under ``folder`` (relative to the working folder or absolute); with
    ``npu_smi_interval``, npu-smi is read during the run (when the host has it) as for msprof."""
    config.validate()
    setup = config.env_setup() or target.toolkit_setup()
    log = None
    if npu_smi_interval is not None:
        place, cwd = _prepare(target, config, f"profiles/{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}")
        log = f"{place}/{LOG_NAME}"
        sample = (f"{{ {smi_command(TIMEOUT_S)} info >/dev/null 2>&1 && "
                  f"{sampler_script(log, npu_smi_interval, TIMEOUT_S)} || true; }}")
        setup = f"{setup} && {sample}" if setup else sample
    else:
        cwd = _real_workdir(target, config)
    argv = config.argv()
    run = ToolRun(config.name, argv, cwd=cwd, accept=None, env_setup=setup)
    done = yield from run_on_toolkit(run, target, cancel)
    status, lines = done.status, done.lines
    if status != 0:
        raise UserError(f"The run failed on {target.where} with exit code {status}", f"{target.where}: {config.command}",
                        "Read its output above.")
    base = folder if folder.startswith("/") else f"{cwd or '.'}/{folder}"
    base = target.realpath(base)
    entries = list_files(target, base, depth=1, kind="d")
    runs = sorted(e for e in entries if e.endswith("_ascend_pt"))
    if not runs:
        raise UserError(f"No *_ascend_pt folder under {base} on {target.where}", base,
                        "Check the folder the script's torch_npu profiler writes (dir_name / "
                        "tensorboard_trace_handler).")
    newest = max(runs, key=lambda name: _mtime(target, f"{base}/{name}"))
    remote = f"{base}/{newest}"
    files = list_files(target, remote)
    local, size = yield from fetcher_for(target, fetch)(remote, files, Path(out), cancel)
    samples = _npu_smi_samples(target, log, local) if log is not None else 0
    return HostProfile(local, remote, target.where, shlex.join(argv), False, len(files), size, lines, samples)


_NPU_FAILED = 86
_NPU_MARK = "studio: npu-smi info failed"
_NO_WORKDIR = 87


def _prepare(target, config: RunConfig, relative: str) -> tuple[str, str | None]:
    """One round trip: the output folder is made, and both it and the configuration's working
    folder are resolved to symlink-free paths (msprof refuses paths through links)."""
    lines = [f"( {target.workdir_script(relative)} ) || exit 1"]  # a subshell: its cd stays inside
    if config.workdir:
        lines.append(f"cd -- {shlex.quote(config.workdir)} 2>/dev/null && pwd -P || exit {_NO_WORKDIR}")
    status, out, err = target.run_script("\n".join(lines), timeout=60)
    text = out.decode("utf-8", "replace").splitlines()
    if status == _NO_WORKDIR:
        raise UserError(f"The working folder does not exist on {target.where}", config.workdir,
                        "Upload the deployment first, or fix the run configuration's working folder.")
    if status != 0 or len(text) < (2 if config.workdir else 1):
        raise UserError(f"Cannot prepare the profile folder on {target.where}: "
                        f"{err.decode('utf-8', 'replace').strip()}", f"{target.name}:{target.work_root()}",
                        "Check the free disk space and the folder's permissions.")
    return (text[-2], text[-1]) if config.workdir else (text[-1], None)


def _real_workdir(target, config: RunConfig) -> str | None:
    if not config.workdir:
        return None
    try:
        return target.realpath(config.workdir)
    except Exception as exc:  # noqa: BLE001 - a missing folder is the user's to fix
        raise UserError(f"The working folder does not exist on {target.where}", config.workdir,
                        "Upload the deployment first, or fix the run configuration's working folder.") from exc


def _mtime(target, path: str) -> float:
    status, out, _ = target.run_script(f"stat -c %Y {shlex.quote(path)}", timeout=30)
    try:
        return float(out.decode().strip()) if status == 0 else 0.0
    except ValueError:
        return 0.0


def _log_dir(config: RunConfig) -> str:
    return config.env.get("ASCEND_PROCESS_LOG_PATH", "").rstrip("/") + "/debug/plog/" \
        if config.env.get("ASCEND_PROCESS_LOG_PATH") else PLOG_DIR
