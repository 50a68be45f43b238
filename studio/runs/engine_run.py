"""Run one ``studio`` command with Studio's engine on a host and bring its results back.

The files the command reads are uploaded into a fresh work folder (``in/``), the command runs
there as ``<venv>/bin/python -m studio ARGS`` with its outputs under ``out/``, its progress lines
stream back, and ``out/`` comes home with the atomic folder download; each entry is then moved
into the local destination folder. Paths in what the command printed are rewritten to the
local ones, so the output reads as if the command had run here.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.runs.engine_env import EngineEnv
from studio.runs.engine_folders import ACTIVE, OWNER_FILE, is_stale, list_runs_script, owner_line, parse_runs
from studio.targets.base import stream

#: Printed by the host's ``print_progress`` before each progress line (STUDIO_PROGRESS=lines).
PROGRESS_PREFIX = "studio-progress "
#: More uploads than this go up as one archive.
BATCH_UPLOADS = 8


@dataclass
class EngineRun:
    """What a command run by the host's engine printed, and where its results landed here."""

    where: str
    work: str
    exit_code: int
    stdout: str
    stderr: list[str] = field(default_factory=list)
    seconds: float = 0.0
    fetched: list[Path] = field(default_factory=list)

    def rewrite(self, text: str, mapping: dict[str, str]) -> str:
        """``text`` with the remote paths in ``mapping`` replaced (longest first)."""
        for remote in sorted(mapping, key=len, reverse=True):
            text = text.replace(remote, mapping[remote])
        return text


def rewrite_json(value, mapping: dict[str, str]):
    """A JSON value with remote path prefixes in its strings replaced by local ones."""
    if isinstance(value, dict):
        return {k: rewrite_json(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [rewrite_json(v, mapping) for v in value]
    if isinstance(value, str):
        for remote in sorted(mapping, key=len, reverse=True):
            if value == remote.rstrip("/") or value.startswith(remote):
                return mapping[remote] + value[len(remote):] if value.startswith(remote) else \
                    mapping[remote].rstrip("/")
    return value


def _merge_into(source: Path, dest: Path) -> list[Path]:
    """Move every entry of ``source`` into ``dest`` (folders merged, files replaced); the new paths."""
    dest.mkdir(parents=True, exist_ok=True)
    moved = []
    for entry in sorted(source.iterdir()):
        target = dest / entry.name
        if entry.is_dir() and target.is_dir():
            _merge_into(entry, target)
        else:
            if target.is_dir() and not target.is_symlink():
                raise UserError("A folder is in the way of a fetched file", target, "Move it away and run again.")
            os.replace(entry, target)
        moved.append(target)
    return moved


def run_engine_command(target, env: EngineEnv, args: list[str], uploads: dict[str, Path], dest: Path | None,
                       fetch=None, cancel: CancelToken | None = None, keep_work: bool = False,
                       ok_exit: tuple[int, ...] = (0,)) -> Generator[Progress, None, EngineRun]:
    """Run ``studio ARGS`` on ``target``'s engine; ``uploads`` maps ``in/...`` names to local files.

    ``args`` name the uploaded files by their ``in/...`` paths and write results under ``out/``;
    with ``dest``, ``out/`` is downloaded (``fetch(remote, files, out, cancel)``, or file by file)
    and its entries moved into ``dest``. An exit code outside ``ok_exit`` is a UserError carrying the
    host's message (``convert`` exits 1 when its validation fails: a result, not an error).
    """
    names = sorted(uploads)
    if any(n.startswith("/") or ".." in n.split("/") for n in names):
        raise ValueError(f"upload names must stay inside the work folder: {names}")
    # The work folder and its sub-folders in one round trip, inside the engine's folder (already
    # symlink-free), so runs never write elsewhere on the host.
    work = f"{env.folder}/runs/{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    folders = sorted({f"{work}/{n.rsplit('/', 1)[0]}" for n in names if "/" in n} | {f"{work}/out"})
    # Private (umask 077: folders 0700, files 0600), with its owner noted; the other run folders are
    # listed in the same round trip, so one a cut run left behind goes now.
    script = ("umask 077; mkdir -p -- " + " ".join(shlex.quote(f) for f in folders) +
              f" && printf '%s\\n' {shlex.quote(owner_line())} > {shlex.quote(f'{work}/{OWNER_FILE}')} || exit 1; " +
              list_runs_script(shlex.quote(f"{env.folder}/runs")))
    status, out, err = target.run_script(script, timeout=30)
    if status != 0:
        raise UserError(f"Cannot make the work folder {work} on {target.where}: {err.decode(errors='replace')}",
                        f"{target.where}:{work}", "Check the free disk space there.")
    ACTIVE.add(work)
    stale = [folder for folder, _age, owner in parse_runs(out.decode("utf-8", "surrogateescape"))
             if folder != work and is_stale(folder, owner)]
    if stale:
        _remove(target, *stale)
    try:
        if len(names) > BATCH_UPLOADS:
            yield from _put_batch(target, work, names, uploads, cancel)
        else:
            for name in names:
                yield from target.put(Path(uploads[name]), f"{work}/{name}", cancel, mode=0o600)
        setup = (f"umask 077 && export STUDIO_HOME={shlex.quote(env.folder + '/home')} STUDIO_PROGRESS=lines "
                 "PYTHONDONTWRITEBYTECODE=1")
        argv = [env.python, "-m", "studio", *args]
        yield Progress(None, f"$ studio {shlex.join(args)}   (on {target.where})")
        start = time.monotonic()
        out_lines: list[str] = []
        err_lines: list[str] = []
        job = target.run(argv, cwd=work, env_setup=setup, cancel=cancel)
        try:
            while True:
                try:
                    line = next(job)
                except StopIteration as done:
                    status = int(done.value)
                    break
                if line.stream == "stdout":
                    out_lines.append(line.message)
                elif line.message.startswith(PROGRESS_PREFIX):
                    fraction, _, message = line.message[len(PROGRESS_PREFIX):].partition(" ")
                    yield Progress(float(fraction) if fraction != "-" else None, f"[{target.where}] {message}")
                else:
                    err_lines.append(line.message)
                    yield Progress(None, f"[{target.where}] {line.message}")
        finally:
            job.close()
        seconds = time.monotonic() - start
        result = EngineRun(target.where, work, status, "\n".join(out_lines), err_lines, seconds)
        if status not in ok_exit:
            message = "\n".join(err_lines[-20:]).strip() or "\n".join(out_lines[-20:]).strip()
            mapping = {f"{work}/{n}": str(uploads[n]) for n in names}
            raise UserError(f"On {target.where}: " + result.rewrite(message, mapping) +
                            f"\n  (studio {shlex.join(args)[:300]} exited with {status} in {work})",
                            f"{target.where}", "Fix what the message says; the same command here shows the same.")
        if dest is not None:
            result.fetched = yield from _fetch_out(target, f"{work}/out", Path(dest), fetch, cancel)
        return result
    finally:
        ACTIVE.discard(work)
        if not keep_work:
            _remove(target, work)


def _put_batch(target, work: str, names: list[str], uploads: dict[str, Path], cancel) -> Generator[Progress]:
    """Many files (a folder of pictures) go up as one archive, unpacked by one command: one
    transfer and one round trip instead of one per file."""
    import tarfile
    import tempfile

    with tempfile.TemporaryDirectory(prefix="studio-upload-") as folder:
        archive = Path(folder) / "in.tar"
        with tarfile.open(archive, "w") as tar:
            for name in names:
                if cancel is not None:
                    cancel.raise_if_cancelled()
                info = tar.gettarinfo(str(uploads[name]), arcname=name)
                info.mode, info.uid, info.gid, info.uname, info.gname = 0o600, 0, 0, "", ""
                with open(uploads[name], "rb") as handle:
                    tar.addfile(info, handle)
        yield Progress(None, f"uploading {len(names):,} files in one archive to {target.where}")
        yield from target.put(archive, f"{work}/.in.tar", cancel, mode=0o600)
    quoted = shlex.quote(work)
    status, _out, err = target.run_script(f"umask 077; cd {quoted} && tar -xf .in.tar && rm -f .in.tar", timeout=600)
    if status != 0:
        raise UserError(f"Cannot unpack the uploaded files in {work} on {target.where}: "
                        f"{err.decode(errors='replace').strip()}", f"{target.where}:{work}",
                        "Check the free disk space there.")


def _remove(target, *folders: str) -> None:
    """Remove work folders without waiting for it (the results are already here)."""
    try:
        target.run_detached("rm -rf -- " + " ".join(shlex.quote(f) for f in folders))
    except Exception:  # the link is gone: the folder stays; it is inside the engine's folder
        pass


def _fetch_out(target, remote: str, dest: Path, fetch, cancel) -> Generator[Progress, None, list[Path]]:
    files: list[str] = []
    if fetch is None:
        status, out, _ = target.run_script(f"cd {shlex.quote(remote)} && find . -type f", timeout=60)
        files = [line[2:] for line in out.decode("utf-8", "surrogateescape").splitlines() if line.startswith("./")]
    dest.mkdir(parents=True, exist_ok=True)
    staging = dest / f".studio-fetch-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        if fetch is None:
            from studio.targets.transfer.fetch import download_folder

            folder, _ = yield from download_folder(target, remote, files, staging, cancel)
        else:
            folder, _ = yield from fetch(remote, files, staging, cancel)
        return _merge_into(Path(folder), dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def json_output(run: EngineRun, mapping: dict[str, str]) -> dict:
    """The command's ``--json`` output with local paths (a UserError if it printed no JSON)."""
    try:
        data = json.loads(run.stdout)
    except ValueError:
        raise UserError(f"Studio's engine on {run.where} printed no JSON: {run.stdout[-400:]}", run.work,
                        "Run the same command here to see what it prints.") from None
    return rewrite_json(data, mapping)


def model_uploads(model: Path) -> dict[str, Path]:
    """``in/<name>`` for the model and ``in/<location>`` for each external-data file it names."""
    import onnx

    model = Path(model)
    if not model.is_file():
        raise UserError("Model not found", model, "Give the path of an .onnx model.")
    uploads = {f"in/{model.name}": model}
    try:
        proto = onnx.load(str(model), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - onnx raises DecodeError and others
        raise UserError(f"Not a readable ONNX model: {exc}", model, f"Check the file: studio info {model}") from exc
    from onnx.external_data_helper import _get_all_tensors

    for tensor in _get_all_tensors(proto):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), None)
        if not location:
            continue
        if location.startswith("/") or ".." in Path(location).parts:
            raise UserError(f"External data {location!r} lies outside the model's folder", model,
                            "Keep the external-data files next to the model (onnx.save(..., location='x.data')).")
        file = model.parent / location
        if not file.is_file():
            raise UserError(f"External data file {location} is missing", file, "Put it next to the model.")
        uploads[f"in/{location}"] = file
    return uploads
