"""The ``fp16`` target of ``studio accuracy reduce|precision``: the model (or a cut of it) converted
to a real FP16 ONNX here by Studio's converter and run with ONNX Runtime, every op's output dumped;
judged as :mod:`studio.tools.accuracy.fp16_onnx` says (the dump, since ONNX Runtime's CPU provider
hides FP16 overflow from the outputs)."""

from __future__ import annotations

import numpy as np

from studio.tools.accuracy.fp16_onnx import input_shape, original_names
from studio.tools.accuracy.fp16_runs import TargetRunner


class Fp16OnnxRunner(TargetRunner):
    """Runs a model (or a cut of it) in FP32, or converted to FP16 with some ops kept in FP32,
    every tensor kept; counts the target runs (conversion + run)."""

    target = "fp16"
    label = "FP16 ONNX (converted, ONNX Runtime)"
    judges_inner = True  # see the module docstring

    def _on_target(self, model, feeds, keep):
        from studio.tools.accuracy.fp16_runs import run_every_tensor

        return original_names(model, run_every_tensor(convert_fp16(model, keep, input_shape(feeds)), feeds))

    def commands(self, flags: str, feeds: dict[str, np.ndarray]) -> str:
        """The shell lines that reproduce a target check on ``model.onnx`` with the saved inputs."""
        switches = " ".join(f"--pass {name}=off" for name in _pass_names())
        return (f"studio convert model.onnx -o model_fp16.onnx --output-type FP16 --input-shape "
                f"'{input_shape(feeds)}' {switches}\n"
                f"studio dump model.onnx -o fp32 {flags}\n"
                f"studio dump model_fp16.onnx -o fp16 {flags}\n"
                "studio compare fp32 fp16\n")


def convert_fp16(model, keep=frozenset(), shapes: str | None = None):
    """``model`` converted by Studio's converter (``studio convert --output-type FP16 --keep-fp32
    ...``) with its fusion passes off: a fused op would leave no output of its own to compare,
    and the kept set names the model's own ops."""
    import tempfile
    from pathlib import Path

    import onnx

    from studio.core.jobs import run_job
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions

    with tempfile.TemporaryDirectory(prefix="studio-fp16-") as tmp:
        source, output = Path(tmp) / "model.onnx", Path(tmp) / "model_fp16.onnx"
        onnx.save(model, source)
        run_job(convert_model(ConvertOptions(model=source, output=output, output_type="FP16", input_shape=shapes or None,
                                             keep_fp32_ops=sorted(keep),
                                             fusions={name: False for name in _pass_names()})))
        return onnx.load(output)


def _pass_names() -> tuple[str, ...]:
    from studio.tools.convert.passes import PASS_NAMES

    return PASS_NAMES


