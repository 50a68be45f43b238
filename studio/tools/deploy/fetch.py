"""Fetch a whole remote folder (a PROF_ folder, a dump tree) with the deployment's downloader.

Small files come in one ``tar`` stream, big ones through ``cat`` on an exec channel (OpenSSH-like
speed), each written under a temporary name; the folder itself is assembled under a temporary
name too and renamed at the end, so a cut connection or a cancel leaves nothing behind.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.tools.deploy.download import Downloader
from studio.tools.deploy.ignore import Excludes
from studio.tools.deploy.scan import FileInfo, scan_remote


@dataclass
class _Item:
    path: str
    remote: FileInfo
    local: FileInfo | None = None  # what the local side holds now: nothing (a fresh folder)


def fetch_folder(conn, remote: str, final: Path, cancel: CancelToken | None = None
                 ) -> Generator[Progress, None, tuple[Path, int, int]]:
    """Download ``remote`` (a folder) to ``final`` (must not exist); returns (final, files, bytes)."""
    final = Path(final)
    if final.exists():
        raise UserError("The download folder exists already", final, "Choose another output folder, or remove it.")
    scan = scan_remote(conn, remote, Excludes())
    if not scan.exists:
        raise UserError("The remote folder does not exist", remote, "Check the path on the host.")
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.parent / f".{final.name}.studio-part-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        items = [_Item(path, info) for path, info in sorted(scan.files.items())]
        stats = yield from Downloader(conn, staging, remote, cancel).run(items, lambda landed: None)
        if stats.failed:
            path, why = stats.failed[0]
            raise UserError(f"{len(stats.failed)} file(s) could not be downloaded ({path}: {why})", remote,
                            "Run again; check the files' permissions on the host.")
        staging.rename(final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return final, stats.files, stats.bytes


def folder_fetcher(target):
    """A ``fetch(remote, files, out, cancel)`` for the host engines when ``target`` is an SSH host
    (None for this computer, where a plain copy is as fast)."""
    if getattr(target, "is_local", True):
        return None

    def fetch(remote: str, files: list[str], out: Path, cancel: CancelToken | None = None):
        name = remote.rstrip("/").rsplit("/", 1)[-1]
        final, _count, size = yield from fetch_folder(target.connection, remote, Path(out) / name, cancel)
        return final, size

    return fetch
