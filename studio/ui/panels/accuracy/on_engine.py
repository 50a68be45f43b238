"""The FP16 check with Studio's engine on an SSH host: both dumps made there, compared here.

The host may be any Linux box (a GPU server, a bigger CPU machine): the engine's venv is made or
reused there (:func:`studio.runs.engine_env.ensure_engine`), ``studio dump`` runs twice (FP32 and
FP16 simulation) on the same inputs, and the two dump folders come back into the same places a
local check writes, so the comparison, its CSV and the graph overlay are those of a local check.
"""

from __future__ import annotations

import tempfile
from collections.abc import Generator
from pathlib import Path

from studio.jobs import CancelToken, Progress


def fp16_check_on_host(context, host: str, model: Path, golden: Path, target_dir: Path, cancel: CancelToken,
                       files: dict | None = None, shapes: dict[str, list[int]] | None = None
                       ) -> Generator[Progress, None, object]:
    """Dump ``model`` in FP32 and FP16 simulation on ``host``, fetch both, compare here."""
    import numpy as np

    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_run import model_uploads, run_engine_command
    from studio.runs.where import target_for_host
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.fp16_check import SEED, csv_path, remove_previous_dump
    from studio.tools.deploy.fetch import folder_fetcher

    model = Path(model)
    uploads = model_uploads(model)
    input_args: list[str] = []
    with tempfile.TemporaryDirectory(prefix="studio-inputs-") as scratch:
        for index, (name, value) in enumerate(sorted((files or {}).items())):
            path = value if isinstance(value, Path) else Path(scratch) / f"input{index}.npy"
            if not isinstance(value, Path):
                np.save(path, value)  # an array the dialog made: sent as a file, as a user's would be
            uploads[f"in/input{index}.npy"] = path  # the host sees neutral names, never local paths
            input_args += ["--input", f"{name}=in/input{index}.npy"]
        for name, dims in (shapes or {}).items():
            input_args += ["--input-shape", f"{name}={','.join(str(d) for d in dims)}"]
        remote = target_for_host(context, host)
        env = yield from ensure_engine(remote, cancel)
        for fraction, folder, extra, label in ((0.1, golden, [], "FP32"),
                                               (0.5, target_dir, ["--fp16-sim"], "FP16 simulation")):
            cancel.raise_if_cancelled()
            yield Progress(fraction, f"dumping {model.name} in {label} on {host}")
            remove_previous_dump(folder)
            folder.parent.mkdir(parents=True, exist_ok=True)
            args = ["dump", f"in/{model.name}", "-o", f"out/{folder.name}", "--seed", str(SEED), *extra, *input_args]
            yield from run_engine_command(remote, env, args, uploads, folder.parent, fetch=folder_fetcher(remote),
                                          cancel=cancel)
    cancel.raise_if_cancelled()
    yield Progress(0.9, "comparing FP32 with FP16 simulation")
    result = yield from compare_dumps(golden, target_dir, cancel=cancel)
    result.write_csv(csv_path(golden))
    return result
