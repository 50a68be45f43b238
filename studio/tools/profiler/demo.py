"""The profiler's part of the demo workspace: a local ONNX Runtime profile of the U-Net.

Written once to ``profiles/unet_cpu/`` (a few iterations, about a second on two cores) and opened
in the Profiler on every ``studio --demo`` start.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress

PROFILE_DIR = Path("profiles") / "unet_cpu"
ITERATIONS, WARMUP = 8, 2


def add_to_demo(folder: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, list[Path]]:
    """Profile ``models/unet.onnx`` into ``profiles/unet_cpu`` unless it is already there."""
    out = Path(folder) / PROFILE_DIR
    model = Path(folder) / "models" / "unet.onnx"
    if (out / "studio_profile.json").is_file():
        return [out]
    if not model.is_file():
        return []
    from studio.tools.profiler.local_run import profile_model

    yield Progress(None, "profiling the demo U-Net")
    yield from profile_model(model, out, iterations=ITERATIONS, warmup=WARMUP, cancel=cancel)
    return [out]
