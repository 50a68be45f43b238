"""Copying a run's results back: a remote folder into a local one, all or nothing.

The plain way, through ``target.get`` file by file (each written under a temporary name), into a
temporary folder renamed at the end. Engines accept a faster ``fetch`` with the same signature
(the deployment's tar / ``cat`` downloader for SSH hosts: studio.tools.deploy.fetch).
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Generator
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress


def download_folder(target, remote: str, files: list[str], out: Path,
                    cancel: CancelToken | None = None, name: str | None = None
                    ) -> Generator[Progress, None, tuple[Path, int]]:
    """Copy ``remote``'s ``files`` (relative paths) into ``out/<name>`` (default: its own name):
    written under a temporary folder and renamed at the end; an existing folder there is refused."""
    name = name or remote.rstrip("/").rsplit("/", 1)[-1]
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
