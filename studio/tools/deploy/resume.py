"""Resuming big uploads a cut connection stopped half-way.

A cut SFTP upload leaves its temporary file (``.NAME.studio-part-TOKEN-…``) on the host: the run's
token is still recorded as this deployment's own, so the next run finds it among the leftovers.
Instead of deleting it, that run renames it to its own temporary name, checks that the bytes
already there are the local file's first bytes (SHA-256 on the host and here, at once) and sends
only the rest. Anything that does not match is sent again from the start.
"""

from __future__ import annotations

import hashlib
import threading

from studio.targets.files import CHUNK, temp_name
from studio.tools.deploy import remote_ops

RESUME_MIN = 1024 * 1024  # a shorter partial file is cheaper to send again than to check


def resumable_parts(items: list, leftovers: list[str], tokens: set[str]) -> dict[str, str]:
    """``{path: leftover}`` for the upload items whose cut temporary file is among ``leftovers``."""
    left = set(leftovers)
    found: dict[str, str] = {}
    for item in items:
        if item.local is None or item.local.size < RESUME_MIN:
            continue
        for token in tokens:
            part = temp_name(item.path, token)
            if part in left:
                found[item.path] = part
                break
    return found


def adopt_parts(conn, root: str, parts: dict[str, str], token: str) -> dict[str, int]:
    """Rename each leftover to this run's temporary name for its file; ``{path: bytes there}``.

    One that cannot be renamed or read is left for the leftover clean-up of a later run.
    """
    sftp = conn.sftp()
    sizes: dict[str, int] = {}
    for path, part in parts.items():
        new = remote_ops.encode(f"{root}/{temp_name(path, token)}")
        try:
            sftp.posix_rename(remote_ops.encode(f"{root}/{part}"), new)
            sizes[path] = sftp.stat(new).st_size or 0
        except OSError:
            continue
    return sizes


def verified_prefix(conn, remote_part: bytes, local_path, size: int):
    """The SHA-256 state of the local file's first ``size`` bytes when the host's partial file
    ``remote_part`` holds exactly those bytes, else None. The host hashes while this computer does."""
    remote: dict = {}

    def hash_there() -> None:
        try:
            status, out, _ = remote_ops.run_bytes(conn, b"sha256sum < " + remote_ops.q(
                remote_part.decode("utf-8", "surrogateescape")), timeout=600)
            remote["hex"] = out.split()[0].decode("ascii") if status == 0 and out.split() else None
        except Exception:  # noqa: BLE001 - no sha256sum, a dropped link: send the whole file
            remote["hex"] = None

    worker = threading.Thread(target=hash_there, name="deploy-resume-hash", daemon=True)
    worker.start()
    digest = hashlib.sha256()
    with open(local_path, "rb") as handle:
        left = size
        while left > 0:
            chunk = handle.read(min(CHUNK * 8, left))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
    worker.join()
    if left != 0 or remote.get("hex") != digest.hexdigest():
        return None
    return digest
