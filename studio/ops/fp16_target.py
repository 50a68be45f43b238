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
        import shlex

        from studio.tools.convert.options import shape_argv

        switches = " ".join(f"--pass {name}=off" for name in _pass_names())
        # one --input-shape NAME=DIMS per input, quoted: a name may hold ';', ':' or spaces
        shapes = shlex.join(shape_argv(input_shape(feeds)))
        return (f"studio convert model.onnx -o model_fp16.onnx --output-type FP16 {shapes} {switches}\n"
                f"studio dump model.onnx -o fp32 {flags}\n"
                f"studio dump model_fp16.onnx -o fp16 {flags}\n"
                "studio compare fp32 fp16\n")


def convert_fp16(model, keep=frozenset(), shapes: dict[str, tuple[int, ...]] | None = None):
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




def check_default_build(model_path, output, keep, inputs: dict | None, seed: int, thresholds):
    """Job: the kept set judged on the build a user makes and ships — ``studio convert --output-type
    FP16 --keep-fp32 SET`` with the converter's default passes, written to ``output`` (the file the
    latency table times) — where the search judged builds with the fusion passes off.

    A fusion can merge a kept op into one that is not kept (MatMul + Add -> Gemm under the
    MatMul's name), so the set that passed with the passes off may fail here. The outputs are
    judged against FP32 with the search's limits, and every dumped tensor for a fresh inf/NaN, as
    the ``fp16`` target judges. Returns ``{"verified", "model", "outputs": {name: {"verdict",
    metrics...}}, "inside", "fusions_on_kept_ops"}``.
    """
    from pathlib import Path

    import onnx

    from studio.core.jobs import Progress
    from studio.tools.accuracy.fp16_onnx import inner_failures
    from studio.tools.accuracy.fp16_runs import judge, run_every_tensor
    from studio.tools.accuracy.local_dump import load_model, make_inputs
    from studio.tools.accuracy.metrics import compare_arrays
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions

    model_path, output = Path(model_path), Path(output)
    proto = load_model(model_path)
    feeds = make_inputs(proto, model_path, inputs or {}, seed, None, [])
    yield Progress(None, "converting the found set with the converter's default passes")
    report = yield from convert_model(ConvertOptions(model=model_path, output=output, output_type="FP16",
                                                     keep_fp32_ops=sorted(keep), input_shape=input_shape(feeds)))
    yield Progress(None, "judging the default-pass build against FP32")
    golden = {**feeds, **run_every_tensor(proto, feeds)}
    dumped = original_names(proto, run_every_tensor(onnx.load(output), feeds))
    outputs = {}
    for name in (o.name for o in proto.graph.output):
        got = dumped.get(name)
        if got is None:
            outputs[name] = {"verdict": "missing from the converted model"}
            continue
        verdict = judge(golden[name], got, thresholds)
        m = compare_arrays(golden[name].astype(np.float32), got.astype(np.float32))
        outputs[name] = {"verdict": verdict.reason if verdict.failed else "passes", "cosine": m.cosine,
                         "rel_euclidean": m.rel_euclidean, "max_abs_err": m.max_abs_err,
                         "target_nonfinite": m.target_nonfinite}
    inside = {k: v for k, v in inner_failures(golden, dumped).items() if k not in outputs}  # outputs: above
    kept = set(keep)
    fusions = [{"pass": f.get("pass"), "result": f.get("result"), "detail": f.get("detail", "")}
               for f in report.fusions if kept & set(f.get("nodes", [])) and f.get("result") not in kept]
    verified = all(o["verdict"] == "passes" for o in outputs.values()) and not inside
    return {"verified": verified, "model": str(output), "passes": "the converter's defaults", "outputs": outputs,
            "inside": inside, "fusions_on_kept_ops": fusions}


def describe_default_build(check: dict) -> str:
    """One line on a :func:`check_default_build` result: passes, or what fails and how to fix it."""
    from pathlib import Path

    name = Path(check["model"]).name
    if check["verified"]:
        return f"verified on the build with the converter's default passes ({name}, as a user converts it): passes"
    failing = [f"{out}: {o['verdict']}" + (f" (cosine {number(o['cosine'])})" if "cosine" in o else "")
               for out, o in check["outputs"].items() if o["verdict"] != "passes"]
    failing += [f"{tensor} (inside): {why}" for tensor, why in check["inside"].items()]
    merged = check["fusions_on_kept_ops"]
    passes = sorted({f["pass"] for f in merged})
    fused = sorted({f["result"] for f in merged if f["result"]})
    how = (f"convert with {' '.join(f'--pass {p}=off' for p in passes)}, or add {', '.join(fused)} to the set"
           if merged else "convert with the fusion passes off (--pass NAME=off), as the search did")
    return (f"the set FAILS on the build with the converter's default passes ({name}, as a user converts it): "
            + "; ".join(failing)
            + (f". Fusions merged kept ops into ops that are not kept: {'; '.join(f['detail'] for f in merged)}"
               if merged else "")
            + f". It passed only with the fusion passes off: {how}.")


def number(value) -> str:
    """A metric for a message: 6 significant digits; as is when JSON made it a string (NaN)."""
    return f"{value:.6g}" if isinstance(value, (int, float)) else str(value)
