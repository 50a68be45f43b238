"""What Studio's engine keeps on a host (and the wheels built here), and removing what is old.

On a host: one folder per engine version under the engine root (``ROOT/<version>``, the venv
and wheels inside) and, in each, the run folders (``runs/<time>-<id>``). Old versions are those
of another Studio version than this one; a run folder goes when its run was cut (made from this
installation by a process that is gone) or when it is older than a limit (any installation's).
Here: the wheels of this Studio built per state of its sources (``<cache>/engine-wheels/<key>``);
all but the current sources' are old.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.runs.engine_folders import is_stale, list_runs_script, parse_runs

CUT, IN_USE, OTHER = "cut", "in use or another installation's", "other"


@dataclass
class EngineRunFolder:
    """One run folder on a host."""

    path: str
    age_s: int
    owner: str
    state: str  # CUT, or IN_USE


@dataclass
class EngineVersion:
    """One engine version folder (on a host) or one built wheel (here)."""

    name: str
    path: str
    kb: int
    current: bool
    runs: list[EngineRunFolder] = field(default_factory=list)


def _root_cd(root: str) -> str:
    if root == "~" or root.startswith("~/"):
        return "cd" + (f" && cd -- {shlex.quote(root[2:])}" if root[2:] else "")
    return f"cd -- {shlex.quote(root)}"


def host_engines(target, current: str) -> tuple[str | None, list[EngineVersion]]:
    """(the engine root's real path or None when there is none, its versions) on ``target``."""
    from studio.runs.engine_env import env_root

    root = env_root(target)
    script = (f"{_root_cd(root)} 2>/dev/null || exit 3; echo \"root=$(pwd -P)\"; "
              "for d in */; do d=${d%/}; [ -d \"$d\" ] && ! [ -L \"$d\" ] || continue; "
              "printf 'version=%s\\t%s\\n' \"$d\" \"$(du -sk -- \"$d\" 2>/dev/null | cut -f1)\"; done; "
              + list_runs_script("*/runs"))
    status, out, err = target.run_script(script, timeout=120)
    if status == 3:
        return None, []
    if status != 0:
        raise UserError(f"Cannot list Studio's engine folder on {target.where}: "
                        f"{err.decode('utf-8', 'replace').strip()}", f"{target.where}:{root}",
                        "Check that the host is reachable and the folder readable.")
    text = out.decode("utf-8", "surrogateescape")
    real = next((line[5:] for line in text.splitlines() if line.startswith("root=")), root)
    versions: dict[str, EngineVersion] = {}
    for line in text.splitlines():
        if line.startswith("version="):
            name, _, kb = line[8:].partition("\t")
            versions[name] = EngineVersion(name, f"{real}/{name}", int(kb) if kb.isdigit() else 0, name == current)
    for folder, age, owner in parse_runs(text):
        version = versions.get(folder.split("/", 1)[0])
        if version is not None:
            version.runs.append(EngineRunFolder(f"{real}/{folder}", age, owner,
                                                CUT if is_stale(f"{real}/{folder}", owner) else IN_USE))
    return real, sorted(versions.values(), key=lambda v: (not v.current, v.name))


def host_cleanup(versions: list[EngineVersion], older_than_s: float) -> list[str]:
    """The folders ``clean`` removes: old versions whole, and in the current one the run folders
    that were cut or are older than ``older_than_s``."""
    doomed = []
    for version in versions:
        if not version.current:
            doomed.append(version.path)
            continue
        doomed += [r.path for r in version.runs if r.state == CUT or r.age_s > older_than_s]
    return doomed


def remove_on_host(target, root: str, paths: list[str]) -> None:
    """``rm -rf`` the given folders, each checked to lie inside the engine root ``root``."""
    for path in paths:
        rel = path[len(root) + 1:] if path.startswith(root + "/") else ""
        if not rel or any(part in ("", ".", "..") for part in rel.split("/")):
            raise ValueError(f"{path} is not inside {root}")
    if not paths:
        return
    script = f"cd -- {shlex.quote(root)} && rm -rf -- " + " ".join(shlex.quote(p[len(root) + 1:]) for p in paths)
    status, _, err = target.run_script(script, timeout=600)
    if status != 0:
        raise UserError(f"Removing old engine folders on {target.where} failed: "
                        f"{err.decode('utf-8', 'replace').strip()}", f"{target.where}:{root}",
                        "Check the folders' permissions there.")


def local_wheels() -> tuple[Path, list[EngineVersion]]:
    """The wheel cache here and its builds (the current sources' build marked current)."""
    from studio.core.paths import cache_dir
    from studio.runs.engine_wheel import source_hash, source_root

    cache = cache_dir() / "engine-wheels"
    try:
        key = source_hash(source_root())[:20]
    except UserError:
        key = None  # installed without sources: no build here is current
    builds = []
    if cache.is_dir():
        for folder in sorted(p for p in cache.iterdir() if p.is_dir() and not p.is_symlink()):
            kb = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) // 1024
            builds.append(EngineVersion(folder.name, str(folder), kb, folder.name == key))
    return cache, sorted(builds, key=lambda b: (not b.current, b.name))


def remove_here(paths: list[str]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
