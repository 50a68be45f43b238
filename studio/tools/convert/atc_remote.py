"""Run ATC on a remote Ascend host over SSH: upload, convert, download the .om (no Qt).

The same :class:`ConvertOptions` that builds the local ``atc`` command (``atc_command``) is
turned into a remote plan (:func:`~studio.tools.convert.atc_command.remote_plan`); this job

1. connects (host key checked first) and checks that the host's CANN toolkit has ``atc``;
2. creates a work folder — ``<deploy_root>/atc/<stamp>-<stem>`` when the host entry has a
   ``deploy_root``, else ``~/.studio/atc/<stamp>-<stem>`` — and resolves it to its physical path
   (``pwd -P``, as realpath does: ATC and msprof reject paths that go through symlinks); the
   toolkit check and the folder are one round trip;
3. uploads the model, weight, AIPP and fusion switch files, each under a temporary name
   renamed into place (a cancelled upload never leaves a half file that looks complete);
4. runs the argv after ``. <toolkit>/set_env.sh``, streaming every output line as Progress;
5. on failure raises :class:`AtcFailed` with ATC's codes explained and the remote log path;
   on success downloads the .om to a temporary local name and renames it onto the output.

Cancel stops the remote ``atc`` (the executor kills its process group) and leaves no partial
local .om. The work folder stays on the host with ``atc.log`` (the streamed output) in it.
"""

from __future__ import annotations

import os
import shlex
import time
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from studio.errors import UserError
from studio.jobs import CancelToken, Progress
from studio.tools.convert.atc_log import AtcMessage, parse_atc_output, succeeded
from studio.tools.convert.options import ConvertOptions
from studio.tools.deploy.hosts import HostEntry
from studio.tools.exec.executor import DEFAULT_TOOLKIT, env_setup_line

PLOG_DIR = "~/ascend/log/debug/plog"
_NO_SET_ENV, _NO_ATC, _NO_DIR = 3, 4, 5  # exit codes of the preparation script


class AtcFailed(UserError):
    """ATC ran and failed (the CLI exits 1 for it, 2 for the other UserErrors)."""

    def __init__(self, what: str, where: str, fix: str, result: RemoteAtcResult):
        self.result = result
        super().__init__(what, where, fix)


@dataclass
class RemoteAtcResult:
    """What a remote run did: where, the argv, exit code, output and findings, the local .om."""

    host: str
    remote_dir: str
    argv: list[str]
    returncode: int
    output: str
    local_om: Path | None = None
    messages: list[AtcMessage] = field(default_factory=list)

    @property
    def remote_log(self) -> str:
        return f"{self.remote_dir}/atc.log"

    @property
    def ok(self) -> bool:
        errors = any(m.level == "error" for m in self.messages)
        return self.returncode == 0 and (succeeded(self.output) or not errors)

    def to_dict(self) -> dict:
        return {"host": self.host, "remote_dir": self.remote_dir, "remote_log": self.remote_log,
                "argv": self.argv, "returncode": self.returncode, "ok": self.ok,
                "output": str(self.local_om) if self.local_om else None,
                "messages": [m.to_dict() for m in self.messages]}


def work_dir_name(model: Path, now: float | None = None) -> str:
    """``<YYYYmmdd-HHMMSS>-<model stem>``: one folder per run, sorted by time."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{Path(model).stem}"


def work_dir_script(entry: HostEntry, name: str) -> str:
    """The shell line that creates the run's folder and prints its symlink-free path."""
    root = entry.extra.get("deploy_root")
    if root:
        path = shlex.quote(str(PurePosixPath(str(root)) / "atc" / name))
        return f"mkdir -p -- {path} && cd -- {path} && pwd -P"
    # "~" is only expanded unquoted: go home first, then use a quoted relative path.
    rel = shlex.quote(f".studio/atc/{name}")
    return f"cd && mkdir -p -- {rel} && cd -- {rel} && pwd -P"


def toolkit_check_script(toolkit: str) -> str:
    """Exit 0 printing atc's path; 3 when set_env.sh is missing; 4 when atc is not found."""
    set_env = shlex.quote(toolkit.rstrip("/") + "/set_env.sh")
    return (f"[ -r {set_env} ] || exit {_NO_SET_ENV}; . {set_env} >/dev/null 2>&1; "
            f"command -v atc || exit {_NO_ATC}")


def prepare_script(entry: HostEntry, toolkit: str, name: str) -> str:
    """One round trip: check the toolkit, create the work folder, print atc's path and the folder.

    Exit 3: no set_env.sh; 4: no atc after sourcing it; 5: the folder cannot be made. ``pwd -P``
    prints the folder with every symlink resolved (what ``realpath`` gives, one channel fewer).
    """
    return f"{toolkit_check_script(toolkit)} && {{ {work_dir_script(entry, name)} || exit {_NO_DIR}; }}"


def _prepare(conn, entry: HostEntry, toolkit: str, name: str) -> tuple[str, str]:
    status, out, err = conn.run(prepare_script(entry, toolkit, name), timeout=30)
    lines = out.decode("utf-8", "replace").splitlines()
    fix = (f"Give the CANN toolkit folder (the one holding set_env.sh) with `studio ssh add {entry.name} "
           f"--host {entry.host} --toolkit DIR` (or Edit… in the Hosts panel); `studio ssh test {entry.name}` "
           "shows what the host has.")
    if status == _NO_SET_ENV:
        raise UserError(f"No CANN toolkit at {toolkit} on {entry.name} (set_env.sh is missing)",
                        f"{entry.name}:{toolkit}", fix)
    if status == _NO_ATC:
        raise UserError(f"atc is not on PATH on {entry.name} after sourcing {toolkit}/set_env.sh",
                        f"{entry.name}:{toolkit}", "Install the CANN toolkit (with ATC) there, or " + fix[0].lower() + fix[1:])
    if status != 0 or len(lines) < 2:
        raise UserError(f"Cannot create the work folder on {entry.name}: {err.decode('utf-8', 'replace').strip()}",
                        entry.name, "Check the host's free disk space and the permissions of the deploy root "
                        "(or of ~/.studio when no deploy_root is set).")
    return lines[0].strip(), lines[-1].strip()


def _upload(sftp, local: Path, remote: str, cancel: CancelToken | None) -> Generator[Progress, None, None]:
    """Copy one file under a temporary name, then rename it into place (atomic on the host)."""
    size = local.stat().st_size
    temp = f"{remote}.part-{uuid.uuid4().hex[:8]}"
    done = False

    def on_bytes(sent: int, _total: int) -> None:
        if cancel is not None:
            cancel.raise_if_cancelled()  # aborts the put; the finally removes the temporary file

    try:
        yield Progress(0.0, f"uploading {local.name} ({size / 1e6:.1f} MB)")
        sftp.put(str(local), temp, callback=on_bytes, confirm=True)
        sftp.posix_rename(temp, remote)
        done = True
    finally:
        if not done:
            try:
                sftp.remove(temp)
            except OSError:
                pass


def _download(sftp, remote: str, local: Path, cancel: CancelToken | None) -> None:
    """Fetch to ``.<name>.part-XXXX`` next to ``local``, then rename: never a partial .om."""
    local.parent.mkdir(parents=True, exist_ok=True)
    temp = local.with_name(f".{local.name}.part-{uuid.uuid4().hex[:8]}")

    def on_bytes(_got: int, _total: int) -> None:
        if cancel is not None:
            cancel.raise_if_cancelled()

    try:
        sftp.get(remote, str(temp), callback=on_bytes)
        os.replace(temp, local)
    finally:
        temp.unlink(missing_ok=True)


def _failure(result: RemoteAtcResult) -> AtcFailed:
    coded = [m for m in result.messages if m.code and m.level == "error"]
    first = coded[0] if coded else next((m for m in result.messages if m.level == "error"), None)
    what = f"ATC failed on {result.host} (exit {result.returncode})"
    if first is not None:
        what += f": {first.code + ' ' if first.code else ''}{first.text}"
        if first.meaning:
            what += f" — {first.meaning}"
    fix = first.fix if first is not None and first.fix else "Read the ATC output above."
    fix += f" The output is kept in {result.remote_log} on {result.host}; ATC's plogs are in {PLOG_DIR}/."
    return AtcFailed(what, f"{result.host}:{result.remote_dir}", fix, result)


def run_atc_remote(options: ConvertOptions, entry: HostEntry, known_hosts=None, ask_secret=None,
                   resolve_host: Callable[[str], HostEntry] | None = None, executor=None,
                   cancel: CancelToken | None = None) -> Generator[Progress, None, RemoteAtcResult]:
    """Convert with ATC on ``entry``'s host and bring the .om back to ``options.output``.

    ``executor`` (an :class:`~studio.tools.exec.remote.SshExecutor`) may be given to reuse an
    open connection; otherwise one is opened here and closed at the end.
    """
    from studio.tools.convert.atc_command import remote_plan
    from studio.tools.exec.remote import SshExecutor

    if options.output is None:
        options.output = Path(options.model).with_suffix("")
    for local in (options.model, options.weight, options.insert_op_conf, options.fusion_switch_file):
        if local is not None and not Path(local).is_file():
            raise UserError("The file does not exist", local, "Check the path (it is uploaded from this computer).")
    remote_plan(options, "/check")  # every ATC rule is checked before we connect
    own = executor is None
    executor = executor or SshExecutor(entry, known_hosts, ask_secret, resolve_host=resolve_host)
    toolkit = entry.toolkit or DEFAULT_TOOLKIT
    try:
        yield Progress(None, f"connecting to {entry.name} ({entry.address})")
        conn = executor.connection
        atc_path, remote_dir = _prepare(conn, entry, toolkit, work_dir_name(options.model))
        yield Progress(None, f"atc on {entry.name}: {atc_path}")
        argv, uploads, (remote_om, local_om) = remote_plan(options, remote_dir)
        yield Progress(None, f"work folder {entry.name}:{remote_dir}")
        sftp = conn.sftp()
        for index, (local, remote) in enumerate(uploads):
            if cancel is not None:
                cancel.raise_if_cancelled()
            for step in _upload(sftp, Path(local), remote, cancel):
                yield Progress((index + (step.fraction or 0)) / len(uploads), step.message)
        yield Progress(None, "$ " + shlex.join(argv))
        lines: list[str] = []
        job = executor.run(argv, cwd=remote_dir, env_setup=env_setup_line(toolkit), cancel=cancel)
        try:
            while True:
                try:
                    line = next(job)
                except StopIteration as done:
                    returncode = done.value
                    break
                lines.append(line.text)
                yield Progress(None, line.text)
        finally:
            job.close()  # on cancel or close: kills the remote process group
        output = "\n".join(lines) + ("\n" if lines else "")
        result = RemoteAtcResult(entry.name, remote_dir, argv, returncode, output, None, parse_atc_output(output))
        _keep_log(sftp, result)
        if not result.ok:
            raise _failure(result)
        try:
            sftp.stat(remote_om)
        except OSError:
            raise UserError(f"ATC reported success but wrote no {PurePosixPath(remote_om).name}",
                            f"{entry.name}:{remote_dir}", "Read the ATC output; check --output and the free disk space.") from None
        yield Progress(None, f"downloading {PurePosixPath(remote_om).name} to {local_om}")
        _download(sftp, remote_om, local_om, cancel)
        result.local_om = local_om
        yield Progress(1.0, f"downloaded {local_om.name}")
        return result
    finally:
        if own:
            executor.close()


def _keep_log(sftp, result: RemoteAtcResult) -> None:
    """Leave the streamed output next to the run on the host (best effort)."""
    try:
        with sftp.open(result.remote_log, "w") as handle:
            handle.write(result.output.encode("utf-8"))
    except OSError:
        pass
