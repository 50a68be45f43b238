"""The FP16 diagnosis of a conversion's validation: the converter's engine and the accuracy engine
joined here, so ``studio convert --output-type FP16 --validate`` names the same cause, op and fix
as ``studio fp16-check`` on the same model.

When the converted model passes (every output within the tolerances, nothing but saturated
attention masks inside), the diagnosis says so from the validation alone. When it fails, the
original model is run in FP32 and in FP16 simulation with the ops the conversion kept in FP32 —
every tensor kept — and compared as two dumps are (:mod:`studio.tools.accuracy.run_compare`).
"""

from __future__ import annotations

from studio.core.jobs import run_job
from studio.core.serial import to_json


def validation_diagnosis(thresholds: dict | None):
    """The ``diagnose`` callback :func:`studio.tools.convert.validate.validate` takes."""

    def diagnose(original, feeds: dict, keep: set[str], validation) -> dict:
        from studio.tools.accuracy.diagnosis import FAIL, PASS, PRECISION_LOSS, Diagnosis
        from studio.tools.accuracy.metrics import Thresholds

        limits = Thresholds.of(thresholds)
        masks = [f for f in validation.fp16_overflow if f.get("mask")]
        notes = ([f"{len(masks)} float16 tensor(s) on attention-mask paths hold -inf (harmless: they end in Softmax)"]
                 if masks else [])
        if validation:
            names = ", ".join(f"{o.name} (cosine {_num(o.cosine)}, max abs error {_num(o.max_abs_error)})"
                              for o in validation.outputs)
            return to_json(Diagnosis(PASS, message=f"Every model output passes: {names}.",
                                     thresholds=limits.as_dict(), notes=notes))
        comparison = run_job(_simulated_comparison(original, feeds, keep, limits))
        found = comparison.diagnosis
        if found:
            # The FP16 simulation of the original passes while the converted model does not: the
            # difference is the conversion's own (a pass, a kept op's boundary), not FP16 range.
            failing = next((o for o in validation.outputs if not o.passed), None)
            where = failing.verdict() if failing else validation.overflow_text()
            found = Diagnosis(FAIL, PRECISION_LOSS, message=f"The converted model fails ({where}) while the FP16 "
                              "simulation of the original, with the same ops in FP32, passes: the difference "
                              "comes from the conversion itself, not from FP16's range.",
                              fix="convert again with --pass NAME=off for the fusions named in the report, and "
                                  "compare the two models with studio compare",
                              thresholds=limits.as_dict(), notes=found.notes)
        found.notes = notes + [n for n in found.notes if n not in notes]
        return to_json(found)

    return diagnose


def _simulated_comparison(original, feeds: dict, keep: set[str], thresholds):
    """Job: the original in FP32 against its FP16 simulation with ``keep`` in FP32, every tensor."""
    import onnx

    from studio.tools.accuracy.fp16_runs import SimRunner, run_every_tensor
    from studio.tools.accuracy.run_compare import compare_runs

    model = onnx.ModelProto.FromString(original.SerializeToString())
    for index, node in enumerate(model.graph.node):  # the names compare and --keep-fp32 use
        if not node.name:
            node.name = f"{node.op_type}_{index}"
    golden = {**feeds, **run_every_tensor(model, feeds)}
    target = SimRunner().run(model, feeds, True, keep)  # its inputs: the golden ones (compare_runs)
    return (yield from compare_runs(model, golden, target, thresholds))


def _num(value) -> str:
    return "n/a" if value is None else value if isinstance(value, str) else f"{value:.6g}"
