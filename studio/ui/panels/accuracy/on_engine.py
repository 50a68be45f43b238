"""The accuracy checks with Studio's engine on an SSH host.

The FP16 check: both dumps made there, compared here.

The host may be any Linux box (a GPU server, a bigger CPU machine): the engine's venv is made or
reused there (:func:`studio.runs.engine_env.ensure_engine`), ``studio dump`` runs twice (FP32 and
FP16 simulation) on the same inputs, and the two dump folders come back into the same places a
local check writes, so the comparison, its CSV and the graph overlay are those of a local check.

Here against a host: the model dumped here and there (e.g. with the host's GPU provider) on the
same input, the host's dump compared against this computer's.
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
    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_run import model_uploads, run_engine_command
    from studio.runs.where import target_for_host
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.fp16_check import SEED, csv_path, remove_previous_dump
    from studio.tools.deploy.fetch import folder_fetcher

    model = Path(model)
    uploads = model_uploads(model)
    with tempfile.TemporaryDirectory(prefix="studio-inputs-") as scratch:
        input_args = _input_arguments(files, shapes, Path(scratch), uploads)
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


def _input_arguments(files: dict | None, shapes: dict | None, scratch: Path, uploads: dict) -> list[str]:
    """``--input`` / ``--input-shape`` for the host's command; arrays the dialog made are saved in
    ``scratch`` and every input file is added to ``uploads`` under a neutral name."""
    import numpy as np

    args: list[str] = []
    for index, (name, value) in enumerate(sorted((files or {}).items())):
        path = value if isinstance(value, Path) else scratch / f"input{index}.npy"
        if not isinstance(value, Path):
            np.save(path, value)  # an array the dialog made: sent as a file, as a user's would be
        uploads[f"in/input{index}.npy"] = path  # the host sees neutral names, never local paths
        args += ["--input", f"{name}=in/input{index}.npy"]
    for name, dims in (shapes or {}).items():
        args += ["--input-shape", f"{name}={','.join(str(d) for d in dims)}"]
    return args


def here_and_host_folders(model: Path, host: str, workspace_folder: Path | None) -> tuple[Path, Path]:
    """(dump made here, dump made on ``host``) for ``model``, in the workspace's ``accuracy/``."""
    import re

    from studio.paths import cache_dir

    base = (Path(workspace_folder) if workspace_folder is not None else cache_dir()) / "accuracy"
    stem, tag = Path(model).stem, re.sub(r"[^\w.-]", "_", host)
    return base / f"{stem}_here", base / f"{stem}_on_{tag}"


def compare_here_and_on_host(context, host: str, model: Path, here: Path, there: Path, cancel: CancelToken,
                             providers: list[str] | None = None, files: dict | None = None,
                             shapes: dict[str, list[int]] | None = None) -> Generator[Progress, None, object]:
    """Dump ``model`` here (ONNX Runtime on CPU) and with Studio's engine on ``host`` (with
    ``providers`` there, e.g. CUDAExecutionProvider), on the same seeded or given inputs, and
    compare the host's dump against this computer's: is the other machine's run the same model?"""
    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_run import model_uploads, run_engine_command
    from studio.runs.where import target_for_host
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.fp16_check import SEED, remove_previous_dump
    from studio.tools.accuracy.local_dump import dump_model
    from studio.tools.deploy.fetch import folder_fetcher

    model = Path(model)
    for folder in (here, there):
        remove_previous_dump(folder)
    yield Progress(0.0, f"dumping {model.name} here")
    yield from dump_model(model, here, inputs=_arrays(files), seed=SEED, cancel=cancel, shapes=shapes)
    cancel.raise_if_cancelled()
    uploads = model_uploads(model)
    with tempfile.TemporaryDirectory(prefix="studio-inputs-") as scratch:
        args = ["dump", f"in/{model.name}", "-o", f"out/{there.name}", "--seed", str(SEED),
                *_input_arguments(files, shapes, Path(scratch), uploads)]
        for provider in providers or []:
            args += ["--provider", provider]
        remote = target_for_host(context, host)
        env = yield from ensure_engine(remote, cancel)
        yield Progress(0.5, f"dumping {model.name} on {host}")
        there.parent.mkdir(parents=True, exist_ok=True)
        yield from run_engine_command(remote, env, args, uploads, there.parent, fetch=folder_fetcher(remote),
                                      cancel=cancel)
    cancel.raise_if_cancelled()
    yield Progress(0.9, f"comparing {host} with this computer")
    result = yield from compare_dumps(here, there, cancel=cancel)
    result.write_csv(here.parent / f"{here.name}_vs_{there.name}.csv")
    return result


def _arrays(files: dict | None) -> dict | None:
    """The dialog's inputs as arrays (files are read), as the local dump takes them."""
    import numpy as np

    if not files:
        return None
    return {name: np.load(value) if isinstance(value, Path) else value for name, value in files.items()}
