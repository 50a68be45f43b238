"""The one-click FP16 check: dump a model in FP32 and in FP16 simulation, compare the two.

The graph panel's "FP16 check" (``links.check_fp16``) and ``studio fp16-check MODEL`` end here. The dumps go to
``<workspace>/accuracy/<stem>_fp32`` and ``<stem>_fp16sim`` (the user cache folder without a
workspace), the comparison to ``<stem>_fp32_vs_fp16sim.csv`` beside them. The input is seeded as
in the demo and `studio dump --seed 0`, so the CLI can re-run or re-compare them.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.safe_read import load_json

SEED = 0


def fp16_folders(model: Path, workspace_folder: Path | None) -> tuple[Path, Path]:
    """(golden FP32 dump folder, FP16-simulation dump folder) for ``model``."""
    from studio.core.paths import cache_dir

    base = (Path(workspace_folder) if workspace_folder is not None else cache_dir()) / "accuracy"
    stem = Path(model).stem
    return base / f"{stem}_fp32", base / f"{stem}_fp16sim"


def fp16_check_job(model: Path, golden: Path, target: Path, cancel: CancelToken | None = None,
                   inputs: dict | None = None, shapes: dict[str, list[int]] | None = None, seed: int = SEED,
                   thresholds=None) -> Generator[Progress, None, object]:
    """Dump ``model`` twice (FP32, FP16 simulation) with one input and compare: a CompareResult.

    ``inputs`` (arrays by input name) and ``shapes`` (sizes for dynamic dims) choose the input;
    the rest is seeded random data.
    """
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.local_dump import dump_model

    for folder in (golden, target):
        remove_previous_dump(folder)
    yield Progress(0.0, f"dumping {model.name} in FP32")
    yield from dump_model(model, golden, inputs=inputs, seed=seed, cancel=cancel, shapes=shapes)
    if cancel is not None:
        cancel.raise_if_cancelled()
    yield Progress(0.45, f"dumping {model.name} in FP16 simulation")
    yield from dump_model(model, target, inputs=inputs, seed=seed, fp16_sim=True, cancel=cancel, shapes=shapes)
    if cancel is not None:
        cancel.raise_if_cancelled()
    yield Progress(0.9, "comparing FP32 with FP16 simulation")
    result = yield from compare_dumps(golden, target, thresholds=thresholds, cancel=cancel)
    result.write_csv(csv_path(golden))  # as the demo does: the comparison reopens from the workspace
    return result


def csv_path(golden: Path) -> Path:
    """Where the comparison CSV goes: next to the dumps, ``<stem>_fp32_vs_fp16sim.csv``."""
    return golden.parent / f"{golden.name}_vs_fp16sim.csv"


def remove_previous_dump(folder: Path) -> None:
    """Delete the files of an earlier `studio dump` in ``folder`` (only those its manifest names).

    Each dump's file names carry a time stamp, so a repeated check would otherwise pile up
    every earlier run's tensors next to the new ones.
    """
    from studio.tools.accuracy.dumpset import MANIFEST, MANIFEST_FORMAT

    manifest = Path(folder) / MANIFEST
    try:
        data = load_json(manifest, "dump manifest")
    except (OSError, ValueError, RecursionError, UserError):
        return  # no earlier dump here (or not one of ours): leave the folder alone
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        return
    files = [t.get("file") for t in data.get("tensors", []) if isinstance(t, dict)]
    files += [i.get("file") for i in data.get("inputs", {}).values() if isinstance(i, dict)]
    for name in files:
        if isinstance(name, str) and name and Path(name).name == name:  # plain names inside the folder only
            (Path(folder) / name).unlink(missing_ok=True)
    manifest.unlink(missing_ok=True)
