"""Fetch a whole remote folder (a PROF_ folder, a dump tree, a run's results) into a local one, all or nothing.

Two ways, one contract ``fetch(remote, files, out, cancel) -> (folder, bytes)``:

- :func:`download_folder`, the plain way: ``target.get`` file by file (each written under a
  temporary name) — what this computer uses, where a copy is as fast as anything;
- :func:`fetch_folder`, the deployment's downloader: small files in one ``tar`` stream, big ones
  through ``cat`` on an exec channel (OpenSSH-like speed) — what SSH hosts use.

Either way the folder is assembled under a temporary name and renamed at the end, so a cut
connection or a cancel leaves nothing behind. :func:`fetcher_for` picks the way for a target.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.targets.transfer.scan import FileInfo


@dataclass
class _Item:
    path: str
    remote: FileInfo
    local: FileInfo | None = None  # what the local side holds now: nothing (a fresh folder)


@contextmanager
def _staged(final: Path, fix: str) -> Iterator[Path]:
    """A temporary folder beside ``final`` (which must not exist), renamed to it when the block ends
    without an error and removed otherwise."""
    if final.exists():
        raise UserError("The download folder exists already", final, fix)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.parent / f".{final.name}.studio-part-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        yield staging
        staging.rename(final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def download_folder(target, remote: str, files: list[str], out: Path,
                    cancel: CancelToken | None = None, name: str | None = None
                    ) -> Generator[Progress, None, tuple[Path, int]]:
    """Copy ``remote``'s ``files`` (relative paths) into ``out/<name>`` (default: its own name)
    through ``target.get``; an existing folder there is refused."""
    name = name or remote.rstrip("/").rsplit("/", 1)[-1]
    final = Path(out) / name
    total = 0
    with _staged(final, "Choose another -o folder, or remove it.") as staging:
        for index, rel in enumerate(files):
            if cancel is not None:
                cancel.raise_if_cancelled()
            local = staging / rel
            local.parent.mkdir(parents=True, exist_ok=True)
            yield from target.get(f"{remote}/{rel}", local, cancel)
            total += local.stat().st_size
            yield Progress(0.7 + 0.3 * (index + 1) / max(1, len(files)),
                           f"downloaded {index + 1}/{len(files)} files ({total / 2**20:.1f} MiB)")
    return final, total


def fetch_folder(conn, remote: str, final: Path, cancel: CancelToken | None = None
                 ) -> Generator[Progress, None, tuple[Path, int, int]]:
    """Download ``remote`` (a folder) to ``final`` (must not exist) over ``conn`` with the tar/``cat``
    downloader; returns (final, files, bytes)."""
    from studio.targets.transfer.download import Downloader
    from studio.targets.transfer.ignore import Excludes
    from studio.targets.transfer.scan import scan_remote

    final = Path(final)
    if final.exists():
        raise UserError("The download folder exists already", final, "Choose another output folder, or remove it.")
    scan = scan_remote(conn, remote, Excludes())
    if not scan.exists:
        raise UserError("The remote folder does not exist", remote, "Check the path on the host.")
    with _staged(final, "Choose another output folder, or remove it.") as staging:
        items = [_Item(path, info) for path, info in sorted(scan.files.items())]
        stats = yield from Downloader(conn, staging, remote, cancel).run(items, lambda landed: None)
        if stats.failed:
            path, why = stats.failed[0]
            raise UserError(f"{len(stats.failed)} file(s) could not be downloaded ({path}: {why})", remote,
                            "Run again; check the files' permissions on the host.")
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


def fetcher_for(target, fetch=None):
    """``fetch`` when given, else the plain :func:`download_folder` through ``target`` (it needs
    the list of files; the SSH downloader of :func:`folder_fetcher` lists them itself)."""
    return fetch or partial(download_folder, target)
