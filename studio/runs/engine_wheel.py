"""The wheel of this Studio and the engine's dependency pins, as a host's engine venv installs them.

The wheel is built from the running package's source tree (``pip wheel --no-deps``) and cached
under the user cache, keyed by a hash of the sources, so a second bootstrap does not rebuild it.
The pins are the versions installed *here* of the headless engine's dependencies only (no Qt):
what ``studio profile run``, ``dump``, ``convert --validate``, ``bench`` and ``infer`` import.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError

#: Distributions the headless engine imports (psutil: the profiler's memory column; OpenCV: infer's pictures).
ENGINE_PACKAGES = ("numpy", "onnx", "onnxruntime", "msgspec", "platformdirs", "psutil", "opencv-python-headless")
DIST_NAME = "studio-workbench"


@dataclass(frozen=True)
class EngineWheel:
    """A built wheel of this Studio: its file, sha256, version and the hash of its sources.

    The sources' hash identifies the build; the wheel's sha256 is recorded in the host's marker
    and compared there (the build is reproducible: the same sources give the same bytes), and pip
    installs the uploaded wheel only if it has this sha256."""

    path: Path
    sha256: str
    version: str
    source: str = ""


def engine_pins() -> dict[str, str]:
    """``{distribution: version}`` of the engine's dependencies installed here."""
    from importlib import metadata

    pins = {}
    for name in ENGINE_PACKAGES:
        try:
            pins[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            if name != "psutil":  # optional: the profile's memory column is left out without it
                raise UserError(f"{name} is not installed here, so the host's engine cannot be pinned to it", name,
                                f"Install Studio's dependencies here (pip install {name}).") from None
    return pins


def source_root() -> Path:
    """The source tree of the running Studio (the folder with pyproject.toml)."""
    import studio

    root = Path(studio.__file__).resolve().parents[1]
    if not (root / "pyproject.toml").is_file():
        raise UserError("This Studio was installed without its sources, so no wheel can be built for a host",
                        root, "Run Studio from a source checkout (pip install -e .) to use --host with Studio's engine.")
    return root


def source_hash(root: Path) -> str:
    """sha256 over the files that go into the wheel (paths and contents), caches left out."""
    digest = hashlib.sha256()
    files = [root / "pyproject.toml"]
    for folder in ("studio", "resources"):
        base = root / folder
        if base.is_dir():
            files += sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def build_wheel(cache: Path | None = None) -> EngineWheel:
    """The wheel of this Studio, built once per source state (cached under ``cache``)."""
    from studio import __version__
    from studio.core.paths import cache_dir

    root = source_root()
    source = source_hash(root)
    key = source[:20]
    folder = (cache or cache_dir() / "engine-wheels") / key
    wheels = sorted(folder.glob("studio_workbench-*.whl")) if folder.is_dir() else []
    if not wheels:
        staging = folder.with_name(folder.name + ".part")
        staging.mkdir(parents=True, exist_ok=True)
        base = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(staging), str(root)]
        # Without build isolation when hatchling is installed here (offline and fast), else pip fetches it.
        done = subprocess.run(base[:4] + ["--no-build-isolation"] + base[4:], capture_output=True, text=True,
                              timeout=600)
        if done.returncode != 0:
            done = subprocess.run(base, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise UserError(f"Building Studio's wheel failed: {done.stderr.strip()[-800:]}", root,
                            "Install the build backend here (pip install hatchling) and try again.")
        staging.rename(folder) if not folder.exists() else None
        wheels = sorted(folder.glob("studio_workbench-*.whl"))
        if not wheels:
            raise UserError("pip built no Studio wheel", folder, "Remove that folder and try again.")
    wheel = wheels[-1]
    return EngineWheel(wheel, hashlib.sha256(wheel.read_bytes()).hexdigest(), __version__, source)
