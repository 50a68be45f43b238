"""Apply a found FP32 set: convert the original model to FP16 keeping the set in FP32 (the
converter's own operation, :mod:`studio.ops.convert`), then verify the result by dumping both
models with the same inputs the check used and comparing them op by op.

The Accuracy panel's *Apply* after *Find FP32 set* runs this; from the command line it is
``studio convert MODEL -o OUT --output-type FP16 --keep-fp32 OPS`` then
``studio compare`` of ``studio dump MODEL`` and ``studio dump OUT`` with the same ``--input``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core.jobs import CancelToken, Progress


@dataclass
class Applied:
    """The keep-FP32 build and its check against the original.

    ``report``: the converter's ConvertReport; ``comparison``: the CompareResult of the original
    (golden) against the build (target), judged on each tensor's own dtype, so the kept ops are
    judged as FP32; ``pair``: the two dump folders.
    """

    model: Path
    output: Path
    keep: list[str]
    report: object
    comparison: object
    pair: tuple[Path, Path]

    @property
    def verified(self) -> bool:
        """Whether every model output of the build passes against the original."""
        return bool(self.comparison.diagnosis)


def apply_output(model: Path, workspace: Path | None) -> Path:
    """Where the keep-FP32 build goes: the workspace's ``convert/`` folder, else beside the model."""
    folder = Path(workspace) / "convert" if workspace is not None else Path(model).parent
    return folder / f"{Path(model).stem}_fp16_keep.onnx"


def apply_fp32_set(model: Path, keep: list[str], output: Path, inputs: dict, folder: Path,
                   cancel: CancelToken | None = None) -> Generator[Progress, None, Applied]:
    """Convert ``model`` with ``keep`` in FP32 to ``output``, then compare it with ``model`` on
    ``inputs`` (name -> array, the check's own) in ``folder`` (``golden/``, ``target/``)."""
    from studio.ops import convert
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.local_dump import dump_model, reusable_inputs
    from studio.tools.convert.options import ConvertOptions

    model, output, folder = Path(model), Path(output), Path(folder)
    output.parent.mkdir(parents=True, exist_ok=True)
    options = ConvertOptions(model=model, output=output, output_type="FP16", keep_fp32_ops=list(keep))
    result = yield from convert.run(convert.Request(options), None, None, cancel)
    golden = yield from dump_model(model, folder / "golden", inputs=inputs or None, seed=0, cancel=cancel)
    target = yield from dump_model(output, folder / "target", inputs=reusable_inputs(golden, output), seed=0,
                                   cancel=cancel)
    comparison = yield from compare_dumps(golden, target, cancel=cancel)
    return Applied(model, output, list(keep), result.report, comparison, (folder / "golden", folder / "target"))
