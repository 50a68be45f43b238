"""The accuracy panel's checks as operations (:mod:`studio.ops.fp16_check`,
:mod:`studio.ops.cross_check`, :mod:`studio.ops.compare_models`), here or with Studio's engine on
a host; the panel shows the comparison they return. Arrays the input dialog made go as files, as a
user's would."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.ops.inputs import saved_inputs


def accuracy_folder(workspace_folder: Path | None) -> Path | None:
    """Where the checks write their dumps: ``<workspace>/accuracy`` (None: the user cache)."""
    return Path(workspace_folder) / "accuracy" if workspace_folder is not None else None


def fp16_check_job(context, host: str | None, model: Path, workspace_folder: Path | None, cancel: CancelToken,
                   files: dict | None = None, shapes: dict[str, list[int]] | None = None
                   ) -> Generator[Progress, None, object]:
    """The FP16 check of ``model`` here or on ``host``: its CompareResult."""
    from studio.ops import fp16_check

    with saved_inputs(files) as inputs:
        request = fp16_check.Request(Path(model), accuracy_folder(workspace_folder), inputs, dict(shapes or {}))
        return (yield from fp16_check.run(request, host, context, cancel)).compare


def cross_check_job(context, host: str, model: Path, workspace_folder: Path | None, cancel: CancelToken,
                    providers: list[str] | None = None, files: dict | None = None,
                    shapes: dict[str, list[int]] | None = None) -> Generator[Progress, None, object]:
    """``model`` dumped here and on ``host``, compared: its CompareResult."""
    from studio.ops import cross_check

    with saved_inputs(files) as inputs:
        request = cross_check.Request(Path(model), accuracy_folder(workspace_folder), inputs, dict(shapes or {}),
                                      providers=list(providers or []))
        return (yield from cross_check.run(request, host, context, cancel)).compare


def compare_models_job(original: Path, converted: Path, folder: Path, cancel: CancelToken,
                       shapes: dict[str, list[int]] | None = None, files: dict | None = None
                       ) -> Generator[Progress, None, object]:
    """The converter's "compare with original": ``converted`` against ``original`` on the same
    input, dumps under ``folder`` (``golden/``, ``target/``): its CompareResult."""
    from studio.ops import compare_models

    with saved_inputs(files) as inputs:
        request = compare_models.Request(Path(original), Path(folder), inputs, dict(shapes or {}),
                                         converted=Path(converted))
        return (yield from compare_models.run(request, None, None, cancel)).compare


def here_and_host_folders(model: Path, host: str, workspace_folder: Path | None) -> tuple[Path, Path]:
    """(dump made here, dump made on ``host``) for ``model``, in the workspace's ``accuracy/``."""
    from studio.ops import cross_check

    return cross_check.Request(Path(model), accuracy_folder(workspace_folder)).folders(host)
