"""Resuming big uploads (and downloads) a cut connection stopped half-way.

A cut SFTP upload leaves its temporary file (``.NAME.studio-part-TOKEN-…``) on the host: the run's
token is still recorded as this deployment's own, so the next run finds it among the leftovers.
Instead of deleting it, that run renames it to its own temporary name, checks that the bytes
already there are the local file's first bytes (:func:`~studio.targets.files.verified_prefix`) and
sends only the rest. Anything that does not match is sent again from the start. Big downloads
(the ones streamed through ``cat``) do the same the other way: the partial file stays here, and
the host sends what follows it (``tail -c +N``) once its first bytes hash alike.
"""

from __future__ import annotations

from studio.targets.files import RESUME_MIN, root_temp_name, temp_name
from studio.targets.transfer import remote_ops


def resumable_parts(items: list, leftovers: list[str], tokens: set[str], minimum: int = RESUME_MIN,
                    side: str = "local") -> dict[str, str]:
    """``{path: leftover}`` for the items (whose ``side`` — the file being sent — has at least
    ``minimum`` bytes) whose cut temporary file is among ``leftovers`` (an upload's is in the root:
    :func:`~studio.targets.files.root_temp_name`; a download's beside its file)."""
    name = root_temp_name if side == "local" else temp_name
    left = set(leftovers)
    found: dict[str, str] = {}
    for item in items:
        info = getattr(item, side)
        if info is None or info.size < minimum:
            continue
        for token in tokens:
            part = name(item.path, token)
            if part in left:
                found[item.path] = part
                break
    return found


def adopt_parts(conn, root: str, parts: dict[str, str], token: str) -> dict[str, int]:
    """Rename each leftover to this run's temporary name for its file; ``{path: bytes there}``.

    One that cannot be renamed or read is left for the leftover clean-up of a later run, and so is
    every one when the root is not the folder the plan saw (never a rename through a swapped root).
    """
    from studio.targets.transfer.safe_paths import remote_parent_problem

    sftp = conn.sftp()
    sizes: dict[str, int] = {}
    for path, part in parts.items():
        if remote_parent_problem(sftp, remote_ops.encode(root), part):  # the root itself, as planned
            continue
        new = remote_ops.encode(f"{root}/{root_temp_name(path, token)}")
        try:
            sftp.posix_rename(remote_ops.encode(f"{root}/{part}"), new)
            sizes[path] = sftp.stat(new).st_size or 0
        except OSError:
            continue
    return sizes


def adopt_local_parts(root, parts: dict[str, str], token: str) -> dict[str, int]:
    """:func:`adopt_parts` for the partial downloads a cut left here (never through a symlink)."""
    import os

    from studio.targets.transfer.safe_paths import local_parent_is_link

    sizes: dict[str, int] = {}
    for path, part in parts.items():
        if local_parent_is_link(root, path) or os.path.islink(root / part):
            continue
        new = root / temp_name(path, token)
        try:
            os.rename(root / part, new)
            sizes[path] = new.stat().st_size
        except OSError:
            continue
    return sizes
