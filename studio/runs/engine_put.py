"""Files into Studio's engine folder on a host through the shell that entered and checked it.

An upload by path (SFTP) lands wherever the path leads at that moment; a folder exchanged after
the probe would receive it. :func:`put_pinned` streams the file into ``cat`` run by a shell that
has just entered the folder with :func:`~studio.runs.engine_folders.pinned_script`, so the bytes
go to ``./NAME`` of the folder that was checked, or nowhere.
"""

from __future__ import annotations

from collections.abc import Generator

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.runs.engine_folders import UNSAFE, env_root, pinned_script, unsafe_error, unsafe_line


def put_pinned(target, local, rel: str, folder: str, cancel: CancelToken | None = None
               ) -> Generator[Progress, None, None]:
    """Upload ``local`` to ``./REL`` of the engine folder ``folder`` through the shell that entered
    and checked it (:func:`pinned_script`): written under a temporary name, its size checked, then
    renamed; 0600. Never by a path, so an engine folder exchanged after the probe gets nothing."""
    import io
    from pathlib import Path

    root = env_root(target)
    local = Path(local)
    size = local.stat().st_size
    yield Progress(None, f"uploading {local.name} ({size / 1e6:.1f} MB) to {target.where}")
    part = f"{rel}.studio-part"
    write = 'cat > "$1" && wc -c < "$1" && mv -f -- "$1" "$2"'
    out, err = io.BytesIO(), io.BytesIO()
    with open(local, "rb") as source:
        status = target.pipe(["sh", "-c", write, "sh", f"./{part}", f"./{rel}"], source, out, err,
                             env_setup=pinned_script(folder), cancel=cancel)
    text = out.getvalue().decode("utf-8", "replace")
    found = unsafe_line(text.splitlines())
    if status == UNSAFE and found:
        raise unsafe_error(target.where, root, found)
    written = text.split()[-1] if text.split() else ""
    if status != 0 or written != str(size):
        raise UserError(f"Uploading {local.name} to {target.where} failed (exit code {status}, {written or 0} of "
                        f"{size} bytes): {err.getvalue().decode('utf-8', 'replace').strip()[-400:]}",
                        f"{target.where}:{folder}/{rel}", "Check the free disk space there, then run again.")
    yield Progress(None, f"uploaded {local.name}")

