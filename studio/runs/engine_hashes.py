"""Installing wheels on a host only if they are the bytes sent from here: pip ``--require-hashes``.

Every wheel Studio uploads for the engine — the dependency wheels of ``--engine-wheels upload``
and Studio's own wheel — is installed from a requirements file that pins it to the SHA-256
computed here, so pip itself refuses a wheel changed or damaged on the host between the upload
and the install (there is no moment between a check and the install for it to change).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Generator
from pathlib import Path
from urllib.parse import quote

from studio.core.jobs import CancelToken, Progress
from studio.runs.engine_put import put_pinned


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def wheel_requirement(wheel: Path, sha256: str | None = None) -> str:
    """``name==version --hash=sha256:H`` for a wheel file (its name says both, PEP 427)."""
    name, version = wheel.name.split("-")[:2]
    return f"{name}=={version} --hash=sha256:{sha256 or sha256_of(wheel)}"


def file_requirement(name: str, remote_path: str, sha256: str) -> str:
    """``NAME @ file:///remote/path --hash=sha256:H`` for one wheel already on the host."""
    return f"{name} @ file://{quote(remote_path)} --hash=sha256:{sha256}"


def put_requirements(target, lines: list[str], rel: str, cancel: CancelToken | None, folder: str
                     ) -> Generator[Progress, None, None]:
    """Upload a requirements file holding ``lines`` to ``./REL`` of the engine folder ``folder``
    (0600), through the shell that entered and checked it."""
    with tempfile.TemporaryDirectory(prefix="studio-requirements-") as scratch:
        local = Path(scratch) / "requirements.txt"
        local.write_text("\n".join(lines) + "\n")
        yield from put_pinned(target, local, rel, folder, cancel)
