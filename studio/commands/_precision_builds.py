"""The three builds of ``studio accuracy precision``: all FP16, the FP32 set found, all FP32.

Each FP16 build is made by Studio's converter (``--output-type FP16 --keep-fp32 ...``); its
accuracy is judged on the search's target: in FP16 simulation by default (ONNX Runtime on a CPU
computes an FP16 model in FP32 behind casts, so the converted file's outputs would hide exactly
the overflow being fixed), or the converted file's per-op dump (``--target fp16``);
its latency is the converted file on this computer, timed against the FP32 model in interleaved
rounds with a confidence interval.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from pathlib import Path



from studio.core.jobs import Progress
from studio.core.serial import to_json


def build_and_time(model: Path, out_dir: Path, keep: list[str], inputs: dict, seed: int, thresholds,
                   budget_s: float, runner=None) -> Generator[Progress, None, list[dict]]:
    """Job: convert, judge and time the builds; rows for the accuracy-versus-latency table."""
    from studio.core.ort_providers import open_session
    from studio.tools.accuracy.local_dump import load_model, make_inputs
    from studio.tools.accuracy.precision import _Checker
    from studio.tools.accuracy.fp16_onnx import input_shape
    from studio.tools.accuracy.fp16_runs import SimRunner
    from studio.core.ab import SESSION_FLOOR, interleaved
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions

    proto = load_model(model)
    feeds = make_inputs(proto, model, inputs or {}, seed, None, [])
    golden = {**feeds, **SimRunner().run(proto, feeds, fp16=False)}
    checker = _Checker(proto, feeds, {o.name: golden[o.name] for o in proto.graph.output}, thresholds, runner, golden)
    builds = [("all FP16", []), ("found set", keep)]
    rows: list[dict] = []
    base_session = open_session(model)
    for label, kept in builds:
        path = out_dir / ("model_fp16.onnx" if not kept else "model_fp16_keep.onnx")
        yield Progress(None, f"converting: {label}")
        yield from convert_model(ConvertOptions(model=model, output=path, output_type="FP16", keep_fp32_ops=list(kept),
                                                input_shape=input_shape(feeds)))  # dynamic dims: the input's
        verdicts = checker.verdicts(frozenset(kept))
        session = open_session(path)
        yield Progress(None, f"timing {label} against the FP32 model (interleaved)")
        change = yield from interleaved(lambda: _once(base_session, feeds), lambda s=session: _once(s, feeds),
                                        budget_s=budget_s, floor=SESSION_FLOOR)  # two sessions differ by a few %
        rows.append({"build": label, "model": str(path), "keep_fp32": list(kept), "accuracy": _summary(verdicts),
                     "outputs": verdicts, "latency": {**to_json(change), "new_ms": change.new_ms,
                                                      "base_ms": change.base_ms, "describe": change.describe()}})
    rows.append({"build": "all FP32", "model": str(model), "keep_fp32": ["(every op)"], "accuracy": "the reference",
                 "outputs": {}, "latency": None})
    return rows


def _once(session, feeds: dict) -> float:
    start = time.perf_counter()
    session.run(None, feeds)
    return (time.perf_counter() - start) * 1000.0


def _summary(verdicts: dict[str, str]) -> str:
    failing = [f"{name}: {why}" for name, why in verdicts.items() if why != "passes"]
    return "passes" if not failing else "fails (" + "; ".join(failing)[:120] + ")"



