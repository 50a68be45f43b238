"""Profile a run configuration with msprof where a Target says, and bring the PROF_ folder back.

Steps (journey 2): check the NPU (``npu-smi info``), make a symlink-free output folder on the
host, run ``msprof --application=<the configuration's command> --output=<that folder>`` in the
configuration's working folder (its environment variables passed to msprof, which the app
inherits), find the PROF_ folder msprof reports, run ``msprof --export=on`` when the summaries are
not there yet, and download the folder into ``out`` — under a temporary name first, so a cut
connection or a cancel leaves nothing half-written, and the next run starts clean.

For PyTorch-on-NPU scripts that write ``*_ascend_pt/ASCEND_PROFILER_OUTPUT`` themselves,
:func:`collect_on_host` runs the configuration as it is and downloads the newest such folder.
"""

from __future__ import annotations

import secrets
import shlex
import shutil
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.errors import UserError
from studio.jobs import CancelToken, Progress
from studio.runs.config import RunConfig
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


def profile_on_host(target, config: RunConfig, out: Path, options: MsprofOptions | None = None,
                    cancel: CancelToken | None = None) -> Generator[Progress, None, HostProfile]:
    """Wrap ``config`` in msprof on ``target``; returns the downloaded PROF_ folder under ``out``."""
    config.validate()
    out = Path(out)
    setup = config.env_setup() or target.toolkit_setup()
    yield Progress(0.0, f"checking the NPU on {target.where}")
    _check_npu(target, setup)
    remote_out = target.workdir(f"profiles/{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}")
    cwd = _real_workdir(target, config)
    env = [f"{k}={v}" for k, v in config.env.items()]
    argv = (["env", *env] if env else []) + msprof_argv(config.command, remote_out, options)
    line = command_line(argv)
    yield Progress(0.05, f"$ {'cd ' + shlex.quote(cwd) + ' && ' if cwd else ''}{line}")
    status, lines = yield from _stream(target, argv, cwd, setup, cancel)
    if status != 0:
        raise explain_failure(target.where, line, lines, status, _log_dir(config))
    listing = _list(target, remote_out, depth=1)
    prof = find_prof_folder(lines, remote_out, listing)
    if prof is None:
        raise UserError(f"msprof wrote no PROF_ folder on {target.where}", f"{target.where}: {line}",
                        "Check that the application ran (its output is above) and called aclInit; "
                        f"msprof's log is under {PLOG_DIR}.")
    files = _list(target, prof)
    exported = False
    if needs_export(files):
        export = export_argv(prof)
        yield Progress(0.6, f"$ {command_line(export)}")
        status, more = yield from _stream(target, export, None, setup, cancel)
        if status != 0:
            raise explain_failure(target.where, command_line(export), more, status, _log_dir(config))
        lines += more
        files = _list(target, prof)
        exported = True
    folder, size = yield from download_folder(target, prof, files, out, cancel)
    return HostProfile(folder, prof, target.where, line, exported, len(files), size, lines)


def collect_on_host(target, config: RunConfig, folder: str, out: Path,
                    cancel: CancelToken | None = None) -> Generator[Progress, None, HostProfile]:
    """Run ``config`` as it is (a PyTorch script profiling itself) and download the newest
    ``*_ascend_pt`` folder under ``folder`` (relative to the working folder or absolute)."""
    config.validate()
    setup = config.env_setup() or target.toolkit_setup()
    cwd = _real_workdir(target, config)
    argv = config.argv()
    yield Progress(0.0, f"$ {shlex.join(argv)}")
    status, lines = yield from _stream(target, argv, cwd, setup, cancel)
    if status != 0:
        raise UserError(f"The run failed on {target.where} with exit code {status}", f"{target.where}: {config.command}",
                        "Read its output above.")
    base = folder if folder.startswith("/") else f"{cwd or '.'}/{folder}"
    base = target.realpath(base)
    entries = _list(target, base, depth=1, kind="d")
    runs = sorted(e for e in entries if e.endswith("_ascend_pt"))
    if not runs:
        raise UserError(f"No *_ascend_pt folder under {base} on {target.where}", base,
                        "Check the folder the script's torch_npu profiler writes (dir_name / "
                        "tensorboard_trace_handler).")
    newest = max(runs, key=lambda name: _mtime(target, f"{base}/{name}"))
    remote = f"{base}/{newest}"
    files = _list(target, remote)
    local, size = yield from download_folder(target, remote, files, Path(out), cancel)
    return HostProfile(local, remote, target.where, shlex.join(argv), False, len(files), size, lines)


def download_folder(target, remote: str, files: list[str], out: Path,
                    cancel: CancelToken | None = None) -> Generator[Progress, None, tuple[Path, int]]:
    """Copy ``remote``'s ``files`` (relative paths) into ``out/<its name>``: written under a
    temporary folder and renamed at the end; an existing folder of that name is refused."""
    name = remote.rstrip("/").rsplit("/", 1)[-1]
    final = Path(out) / name
    if final.exists():
        raise UserError("The download folder exists already", final, "Choose another -o folder, or remove it.")
    Path(out).mkdir(parents=True, exist_ok=True)
    staging = Path(out) / f".{name}.studio-part-{secrets.token_hex(4)}"
    staging.mkdir()
    total = 0
    try:
        for index, rel in enumerate(files):
            if cancel is not None:
                cancel.raise_if_cancelled()
            local = staging / rel
            local.parent.mkdir(parents=True, exist_ok=True)
            yield from target.get(f"{remote}/{rel}", local, cancel)
            total += local.stat().st_size
            yield Progress(0.7 + 0.3 * (index + 1) / max(1, len(files)),
                           f"downloaded {index + 1}/{len(files)} files ({total / 2**20:.1f} MiB)")
        staging.rename(final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return final, total


def _stream(target, argv, cwd, setup, cancel) -> Generator[Progress, None, tuple[int, list[str]]]:
    lines: list[str] = []
    job = target.run(argv, cwd=cwd, env_setup=setup, cancel=cancel)
    try:
        while True:
            try:
                step = next(job)
            except StopIteration as done:
                return int(done.value), lines
            lines.append(step.message)
            yield Progress(None, step.message)
    finally:
        job.close()


def _check_npu(target, setup: str | None) -> None:
    script = (f"{setup} >/dev/null 2>&1; " if setup else "") + "npu-smi info 2>&1"
    status, out, err = target.run_script(script, timeout=30)
    if status != 0:
        lines = (out + err).decode("utf-8", "replace").splitlines() + ["npu-smi info failed"]
        if status == 127:
            lines = ["npu-smi: command not found (no NPU driver installed)", "npu-smi info failed"]
        raise explain_failure(target.where, "npu-smi info", lines, status, "/var/log/npu/slog/ (driver logs)",
                              program="npu-smi")


def _real_workdir(target, config: RunConfig) -> str | None:
    if not config.workdir:
        return None
    try:
        return target.realpath(config.workdir)
    except Exception as exc:  # noqa: BLE001 - a missing folder is the user's to fix
        raise UserError(f"The working folder does not exist on {target.where}", config.workdir,
                        "Upload the deployment first, or fix the run configuration's working folder.") from exc


def _list(target, folder: str, depth: int | None = None, kind: str = "f") -> list[str]:
    # Plain find (no -printf): busybox on RC boards has no -printf.
    limit = f" -maxdepth {depth} -mindepth 1" if depth else ""
    status, out, err = target.run_script(f"cd {shlex.quote(folder)} && find .{limit} -type {kind}", timeout=60)
    if status != 0:
        raise UserError(f"Cannot list {folder} on {target.where}: {err.decode('utf-8', 'replace').strip()}", folder,
                        "Check that the folder exists and is readable.")
    return sorted(line[2:] for line in out.decode("utf-8", "replace").splitlines() if line.startswith("./"))


def _mtime(target, path: str) -> float:
    status, out, _ = target.run_script(f"stat -c %Y {shlex.quote(path)}", timeout=30)
    try:
        return float(out.decode().strip()) if status == 0 else 0.0
    except ValueError:
        return 0.0


def _log_dir(config: RunConfig) -> str:
    return config.env.get("ASCEND_PROCESS_LOG_PATH", "").rstrip("/") + "/debug/plog/" \
        if config.env.get("ASCEND_PROCESS_LOG_PATH") else PLOG_DIR
