"""Demo content: the demo U-Net in FP32 and in FP16 simulation, compared op by op.

Writes ``accuracy/unet_fp32/``, ``accuracy/unet_fp16sim/`` (same seeded input) and
``accuracy/unet_fp32_vs_fp16sim.csv`` under the demo workspace, and returns the CSV so the
accuracy panel opens the comparison. Skips what is already there.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress

SEED = 0


def add_to_demo(folder: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, list[Path]]:
    """Job: dump, compare and write the CSV (a few seconds on first run, instant after)."""
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.dumpset import MANIFEST
    from studio.tools.accuracy.local_dump import dump_model

    model = folder / "models" / "unet.onnx"
    out = folder / "accuracy"
    csv_path = out / "unet_fp32_vs_fp16sim.csv"
    golden, target = out / "unet_fp32", out / "unet_fp16sim"
    if not model.is_file():
        return []
    if csv_path.is_file() and (golden / MANIFEST).is_file() and (target / MANIFEST).is_file():
        return [csv_path]
    yield Progress(None, "accuracy: dumping the U-Net in FP32")
    yield from dump_model(model, golden, seed=SEED, cancel=cancel)
    yield Progress(None, "accuracy: dumping the U-Net in FP16 simulation")
    yield from dump_model(model, target, seed=SEED, fp16_sim=True, cancel=cancel)
    result = yield from compare_dumps(golden, target, cancel=cancel)
    result.write_csv(csv_path)  # atomic: a CSV present means the demo content is complete
    return [csv_path]
