"""The advisor job: load what was given through the other engines, run the rules, build the report.

    report = run_job(advise(model="unet.onnx", profile="profiles/unet_cpu", accuracy="unet.csv"))

Any subset of inputs works. A local profile names its model, which is then used when no model
is given (the report says so). Ascend profiling data is also handed to msprof-analyze when it is
installed (see :mod:`.msprof_analyze`); its findings join ours.

An ONNX model's fusions are what the converter's own passes fold in it (planned in memory). When
the model was profiled here with ONNX Runtime, findings whose estimated gain matters are measured:
their fix or setting is tried and timed A/B against the original (:mod:`.gains`), which then sets
every severity — ``high`` only for a measured gain.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.serial import from_json, to_json
from studio.core.safe_read import load_json
from studio.tools.advisor.context import AccuracyInput, Context
from studio.tools.advisor.devices import THIS_COMPUTER, Device, device_for_facts, load_devices
from studio.tools.advisor.model import Report

DEFAULT_DEVICE = "Ascend 310"


def advise(model: Path | str | None = None, profile: Path | str | None = None, accuracy=None,
           bench: Path | str | None = None, device: str | Device | None = None, msprof: bool = True,
           msprof_out: Path | None = None, cancel: CancelToken | None = None, measure: bool | None = None,
           measure_budget_s: float = 10.0, remeasure_roof: bool = False) -> Generator[Progress, None, Report]:
    """Job: the advisor report over the given inputs (paths; ``accuracy`` may also be a CompareResult).

    ``measure``: A/B-time the fixes and settings the findings suggest (None: when the profile is a
    local ONNX Runtime run of an ONNX model); ``measure_budget_s`` bounds each A/B;
    ``remeasure_roof``: this computer's roofs are measured again rather than read from the cache.
    """
    if not any(x is not None for x in (model, profile, accuracy, bench)):
        raise UserError("Nothing to advise on", "studio advise",
                        "Give at least one of --model, --profile, --accuracy, --bench.")
    t_start = time.perf_counter()
    report = Report()
    ctx = Context()
    seconds: dict[str, float] = {}

    def check():
        if cancel is not None:
            cancel.raise_if_cancelled()

    if profile is not None:
        from studio.tools.advisor.optable import op_table
        from studio.tools.profiler.loader import open_profile

        t0 = time.perf_counter()
        ctx.profile_path = Path(profile)
        yield Progress(0.05, f"reading the profile {ctx.profile_path.name}")
        ctx.trace = yield from open_profile(ctx.profile_path, cancel)
        ctx.ops = op_table(ctx.trace)
        report.notes += ctx.ops.notes
        if ctx.ops.outliers:
            from studio.tools.advisor.rules.top_ops import outlier_text

            report.notes.append(outlier_text(ctx.ops.outliers))
        report.inputs["profile"] = str(ctx.profile_path)
        report.profile_path = str(ctx.profile_path)
        if model is None and ctx.trace.model_path and Path(ctx.trace.model_path).is_file():
            model = ctx.trace.model_path
            report.notes.append(f"model {model} taken from the profile (the model the local run profiled)")
        seconds["profile"] = time.perf_counter() - t0
    check()
    if model is not None:
        from studio.tools.graph.reader import read_graph

        t0 = time.perf_counter()
        ctx.model_path = Path(model)
        from studio.core.model_files import check_external_data

        check_external_data(ctx.model_path)  # findings on a model that cannot run would mislead
        yield Progress(0.3, f"reading the model {ctx.model_path.name}")
        ctx.model = yield from read_graph(ctx.model_path, cancel)
        report.inputs["model"] = str(ctx.model_path)
        report.model_path = str(ctx.model_path)
        seconds["model"] = time.perf_counter() - t0
        if ctx.model_path.suffix.lower() == ".onnx":
            t0 = time.perf_counter()
            ctx.plan = yield from plan_fusions(ctx, report, cancel)
            seconds["plan"] = time.perf_counter() - t0
            if ctx.plan is not None and ctx.plan.input_shape:
                sized = size_dynamic_values(ctx.model.main, ctx.plan)
                if sized:
                    report.notes.append(f"{sized} tensor shape(s) left open by the model's dynamic inputs inferred "
                                        f"with the sizes the profile ran ({ctx.plan.input_shape}), for the roofline")
    check()
    if accuracy is not None:
        t0 = time.perf_counter()
        yield Progress(0.4, "reading the accuracy result")
        ctx.accuracy = load_accuracy(accuracy)
        report.inputs["accuracy"] = ctx.accuracy.path
        seconds["accuracy"] = time.perf_counter() - t0
    if bench is not None:
        ctx.bench_path = Path(bench)
        ctx.bench = load_bench(ctx.bench_path)
        report.inputs["bench"] = str(ctx.bench_path)

    t0 = time.perf_counter()
    chosen = yield from choose_device(device, ctx, report, remeasure_roof)
    report.device = to_json(chosen)
    seconds["device"] = time.perf_counter() - t0
    if ctx.model is not None:
        from studio.tools.advisor.roofline import fit_roofline

        t0 = time.perf_counter()
        yield Progress(0.55, "roofline")
        ctx.roofline, chosen, roofs, notes = yield from fit_roofline(ctx.model.main, chosen,
                                                                     ctx.node_times() if ctx.ops else None)
        report.roofline = ctx.roofline
        report.device = to_json(chosen)
        report.roofline_check = roofs
        report.notes += notes
        seconds["roofline"] = time.perf_counter() - t0
    check()
    from studio.tools.advisor.rules import RULES

    t0 = time.perf_counter()
    for i, rule in enumerate(RULES):
        check()
        yield Progress(0.6 + 0.2 * i / len(RULES), f"rule {rule.__name__.rsplit('.', 1)[-1]}")
        report.findings += rule.check(ctx)
    seconds["rules"] = time.perf_counter() - t0
    run = local_run(ctx)
    if measure or (measure is None and run is not None):
        from studio.tools.advisor.gains import measure as measure_gains

        t0 = time.perf_counter()
        if run is None:
            report.notes.append("gains not measured: they are measured on an ONNX model profiled here with ONNX "
                                "Runtime (give --model M.onnx --profile of a `studio profile run` of it)")
        else:
            yield Progress(0.8, "measuring the suggested changes (interleaved A/B)")
            from studio.tools.advisor.loop import _scaled

            measured = yield from _scaled(measure_gains(ctx.model_path, report.findings, ctx.step_ms, run["files"],
                                                        run["shapes"], budget_s=measure_budget_s, cancel=cancel),
                                          0.8, 0.9)
            report.measurements = measured
            seconds["measure"] = time.perf_counter() - t0
    from studio.tools.advisor.gains import judge

    judge(report.findings)

    if ctx.profile_path is not None and msprof:
        from studio.tools.advisor import msprof_analyze as ma

        if ma.applies_to(ctx.trace.facts, ctx.profile_path):
            t0 = time.perf_counter()
            run = yield from ma.run_msprof_analyze(ctx.profile_path, msprof_out, cancel)
            report.findings += run.findings
            report.msprof_analyze = to_json(run)
            report.notes.append(run.message)
            seconds["msprof-analyze"] = time.perf_counter() - t0

    from studio.tools.advisor.perf_report import performance

    report.performance = performance(ctx, chosen, report.findings)
    if ctx.ops is not None and not ctx.ops.ops:
        report.notes.append(f"{ctx.profile_label} has no per-op table (op_summary / kernel_details): "
                            "op-time rules and measured roofline points are skipped")
    seconds["total"] = time.perf_counter() - t_start
    report.seconds = {k: round(v, 4) for k, v in seconds.items()}
    yield Progress(1.0, f"{len(report.findings)} finding(s)")
    return report


def local_run(ctx: Context) -> dict | None:
    """The inputs of a local ONNX Runtime run of the ONNX model (``files``, ``shapes``), if the profile is one."""
    from studio.tools.advisor.loop import settings_of

    if ctx.model_path is None or ctx.model_path.suffix.lower() != ".onnx" or ctx.profile_path is None \
            or ctx.trace is None or "onnxruntime" not in ctx.trace.facts:
        return None
    settings = settings_of(ctx.profile_path)
    return {"files": settings.get("files", {}), "shapes": settings.get("shapes", {})}


def size_dynamic_values(graph, plan) -> int:
    """Give values whose shape the file leaves open the shape inferred with the profile's input sizes."""
    def static(shape) -> bool:
        return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)

    fill = {name: shape for name, shape in plan.shapes.items() if not static(graph.value(name).shape)}
    return graph.apply_runtime_shapes(fill, plan.dtypes) if fill else 0


def plan_fusions(ctx: Context, report: Report, cancel: CancelToken | None) -> Generator[Progress, None, object]:
    """What the converter's passes fold in the model (sized as the profile ran it, when known);
    None, with a note, when the converter cannot process it."""
    from studio.core.errors import ToolUnavailable
    from studio.tools.advisor.loop import _sized_dynamic_inputs
    from studio.tools.convert.rewrite import plan_passes

    run = local_run(ctx)
    try:
        shape = _sized_dynamic_inputs(ctx.model_path, run["files"], run["shapes"]) if run else None
    except UserError:
        shape = None  # the plan then keeps the dynamic dims symbolic
    try:
        return (yield from plan_passes(ctx.model_path, shape, cancel=cancel))
    except (UserError, ToolUnavailable) as exc:
        report.notes.append(f"fusion findings skipped: the converter's passes cannot process {ctx.model_path.name} "
                            f"({exc})")
        return None


def choose_device(device: str | Device | None, ctx: Context, report: Report, remeasure: bool = False
                  ) -> Generator[Progress, None, Device]:
    """The device the roofline uses: given, named by the profile, this computer for a local run, or
    the default (said so in the notes). ``remeasure``: this computer's roofs are measured again."""
    if isinstance(device, Device):
        return device
    table = load_devices()
    if device:
        if device == THIS_COMPUTER:
            return (yield from this_computer(table, report, remeasure))
        found = table.get(device) or next((d for n, d in table.items() if n.lower() == device.lower()), None)
        if found is None:
            raise UserError(f"Unknown device {device!r}", "--device",
                            "Use one of: " + ", ".join([*table, THIS_COMPUTER]) + " (or add it to the device table).")
        return found
    if ctx.trace is not None:
        named = device_for_facts(ctx.trace.facts, table)
        if named is not None:
            report.notes.append(f"roofline device {named.name}: named by the profile ({ctx.trace.facts.get('device')})")
            return named
        if "onnxruntime" in ctx.trace.facts:
            report.notes.append("roofline device: this computer (the profile is a local ONNX Runtime run)")
            return (yield from this_computer(table, report, remeasure))
    report.notes.append(f"roofline device {DEFAULT_DEVICE}: assumed, none was given (use --device)")
    return table[DEFAULT_DEVICE]


def this_computer(table: dict[str, Device], report: Report | None = None, remeasure: bool = False
                  ) -> Generator[Progress, None, Device]:
    """This computer's roofs: cached for this machine (best of several rounds), else measured now
    and cached (:mod:`.roof_cache`); ``remeasure`` measures again. Where they came from goes into the
    report's notes."""
    from studio.tools.advisor.roof_cache import this_computer_roofs

    yield Progress(None, "this computer's roofs (ONNX Runtime kernels)")
    device, origin = yield from this_computer_roofs(remeasure=remeasure)
    if report is not None:
        report.notes.append(f"this computer's roofs: {device.fp32_flops / 1e9:.1f} GFLOP/s, "
                            f"{device.bandwidth / 1e9:.1f} GB/s, {origin}")
    return device


def load_accuracy(accuracy) -> AccuracyInput:
    """An accuracy input from a CompareResult, a comparison CSV, or ``studio compare --json`` output."""
    from studio.tools.accuracy.advisor import Finding as AccFinding

    if hasattr(accuracy, "findings") and hasattr(accuracy, "rows"):
        return AccuracyInput(str(getattr(accuracy, "target", "comparison")), list(accuracy.findings),
                             accuracy.summary(), list(accuracy.rows), accuracy.target_mode)
    path = Path(accuracy)
    if not path.is_file():
        raise UserError("Accuracy result not found", path, "Give the CSV or JSON a comparison wrote "
                        "(studio compare -o, studio fp16-check, or msaccucmp).")
    if path.suffix.lower() == ".json":
        try:
            data = load_json(path, "comparison JSON")
            findings = from_json(list[AccFinding], data["findings"])
        except (OSError, ValueError, KeyError, TypeError, UserError) as exc:
            raise UserError(f"Not a comparison JSON ({exc})", path,
                            "Give the output of `studio compare --json` or a comparison CSV.") from exc
        return AccuracyInput(str(path), findings, data.get("summary", ""), [], data.get("target_mode", ""))
    from studio.tools.accuracy.report_csv import read_csv

    result = read_csv(path)
    return AccuracyInput(str(path), list(result.findings), result.summary(), list(result.rows), result.target_mode)


def load_bench(path: Path) -> dict:
    """A benchmark result JSON (``studio profile run --json``, ais_bench / msame summaries)."""
    try:
        data = load_json(path, "benchmark result")
    except (OSError, ValueError) as exc:
        raise UserError(f"Cannot read the benchmark result ({exc})", path,
                        "Give the JSON `studio profile run --json` prints, or an ais_bench summary JSON.") from exc
    if not isinstance(data, dict):
        raise UserError("The benchmark result is not a JSON object", path, "Give a summary JSON.")
    from studio.tools.advisor.context import bench_latency_ms

    if bench_latency_ms(data) is None:
        raise UserError("No latency found in the benchmark result", path,
                        "Expected latency_ms.mean (studio profile run --json) or NPU_compute_time.mean (ais_bench).")
    return data
