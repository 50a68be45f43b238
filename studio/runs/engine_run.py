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
from studio.runs.engine_folders import (ACTIVE, OWNER_FILE, UNSAFE, env_root, is_stale, list_runs_script, owner_line,
                                        parse_runs, pinned_script, unsafe_error, unsafe_line)
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
    # The work folder and its sub-folders in one round trip, inside the engine's folder entered and
    # checked by the same shell (pinned_script): every later step acts on ./runs/<id> from there
    # too, so a folder exchanged after a check never receives a file or runs a program.
    rel = f"runs/{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    work = f"{env.folder}/{rel}"
    folders = sorted({f"./{rel}/{n.rsplit('/', 1)[0]}" for n in names if "/" in n} | {f"./{rel}/out"})
    # Private (umask 077: folders 0700, files 0600), with its owner noted; the other run folders are
    # listed in the same round trip, so one a cut run left behind goes now.
    script = (f"{pinned_script(env.folder)}; mkdir -p -- " + " ".join(shlex.quote(f) for f in folders) +
              f" && printf '%s\\n' {shlex.quote(owner_line())} > {shlex.quote(f'./{rel}/{OWNER_FILE}')} || exit 1; " +
              list_runs_script("./runs"))
    status, out, err = target.run_script(script, timeout=30)
    _refuse_unsafe(target, status, out.decode("utf-8", "replace").splitlines())
    if status != 0:
        raise UserError(f"Cannot make the work folder {work} on {target.where}: {err.decode(errors='replace')}",
                        f"{target.where}:{work}", "Check the free disk space there.")
    ACTIVE.add(work)
    stale = [folder for folder, _age, owner in parse_runs(out.decode("utf-8", "surrogateescape"))
             if folder.startswith("./runs/") and folder != f"./{rel}" and is_stale(env.folder + folder[1:], owner)]
    if stale:
        _remove(target, env.folder, *stale)
    try:
        if len(names) > BATCH_UPLOADS:
            yield from _put_batch(target, env.folder, rel, names, uploads, cancel)
        else:
            for name in names:
                yield from _put(target, env.folder, uploads[name], f"{rel}/{name}", f"{work}/{name}", cancel)
        # Entered and checked again by the shell that runs it: the python is ./venv/bin/python of
        # that folder (reached from the work folder as ../../venv/...), never a path string.
        setup = (f"{pinned_script(env.folder)} && export STUDIO_HOME=\"$R/home\" STUDIO_PROGRESS=lines "
                 "PYTHONDONTWRITEBYTECODE=1")
        python = _relative_python(env)
        argv = [python, "-m", "studio", *args]
        yield Progress(None, f"$ studio {shlex.join(args)}   (on {target.where})")
        start = time.monotonic()
        out_lines: list[str] = []
        err_lines: list[str] = []
        job = target.run(argv, cwd=rel, env_setup=setup, cancel=cancel)
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
        _refuse_unsafe(target, status, out_lines)
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
            _remove(target, env.folder, f"./{rel}")


def _relative_python(env: EngineEnv) -> str:
    """The engine's python as reached from a run folder (``runs/<id>``) inside its engine folder."""
    prefix = env.folder.rstrip("/") + "/"
    return "../../" + env.python[len(prefix):] if env.python.startswith(prefix) else env.python


def _refuse_unsafe(target, status: int, lines) -> None:
    """The refusal when a pinned command found the engine folder moved or writable by others."""
    found = unsafe_line(lines)
    if status == UNSAFE and found:
        raise unsafe_error(target.where, env_root(target), found)


def _put(target, folder: str, local: Path, rel: str, path: str, cancel) -> Generator[Progress]:
    """One file into the engine folder's ``./REL`` from the shell that checked it (SSH hosts);
    this computer has no other user's swap to fear between a check and a write."""
    if hasattr(target, "pipe"):
        from studio.runs.engine_put import put_pinned

        yield from put_pinned(target, Path(local), rel, folder, cancel)
    else:
        yield from target.put(Path(local), path, cancel, mode=0o600)


def _put_batch(target, folder: str, rel: str, names: list[str], uploads: dict[str, Path], cancel
               ) -> Generator[Progress]:
    """Many files (a folder of pictures) go up as one archive, unpacked by one command: one
    transfer and one round trip instead of one per file."""
    import tarfile
    import tempfile

    with tempfile.TemporaryDirectory(prefix="studio-upload-") as scratch:
        archive = Path(scratch) / "in.tar"
        with tarfile.open(archive, "w") as tar:
            for name in names:
                if cancel is not None:
                    cancel.raise_if_cancelled()
                info = tar.gettarinfo(str(uploads[name]), arcname=name)
                info.mode, info.uid, info.gid, info.uname, info.gname = 0o600, 0, 0, "", ""
                with open(uploads[name], "rb") as handle:
                    tar.addfile(info, handle)
        yield Progress(None, f"uploading {len(names):,} files in one archive to {target.where}")
        yield from _put(target, folder, archive, f"{rel}/.in.tar", f"{folder}/{rel}/.in.tar", cancel)
    quoted = shlex.quote(f"./{rel}")
    status, out, err = target.run_script(f"{pinned_script(folder)}; cd -- {quoted} && tar -xf .in.tar && "
                                         "rm -f .in.tar", timeout=600)
    _refuse_unsafe(target, status, out.decode("utf-8", "replace").splitlines())
    if status != 0:
        raise UserError(f"Cannot unpack the uploaded files in {folder}/{rel} on {target.where}: "
                        f"{err.decode(errors='replace').strip()}", f"{target.where}:{folder}/{rel}",
                        "Check the free disk space there.")


def _remove(target, folder: str, *relative: str) -> None:
    """Remove run folders (``./runs/<id>`` of the engine folder ``folder``) without waiting for it
    (the results are already here), from the shell that entered and checked that folder."""
    try:
        target.run_detached(f"{pinned_script(folder)}; rm -rf -- " + " ".join(shlex.quote(f) for f in relative))
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
