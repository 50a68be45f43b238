"""``studio advise``: one report over a model, its profile, an accuracy result and a benchmark.

``studio advise --model M --profile P --accuracy R --bench B -o report.html`` writes the report
(HTML, Markdown or JSON by suffix); ``--json`` prints it. ``--apply -o fixed.onnx`` runs the closed
loop on an ONNX model: applies the automatic fixes the findings offer (exact ones; those that
change the numbers only with ``--allow-accuracy-change``), profiles the result with the same
settings, times both interleaved (``--budget``) for the speed-up with its confidence interval,
checks its outputs against the original and prints before / after.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "advise"
HELP = "advisor report over a model, a profile, an accuracy result and a benchmark; --apply fixes and re-measures"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", type=Path, metavar="M", help="ONNX or OM model")
    parser.add_argument("--profile", type=Path, metavar="P",
                        help="profile: studio profile run folder, PROF_*/ASCEND_PROFILER_OUTPUT folder, trace JSON")
    parser.add_argument("--accuracy", type=Path, metavar="R", help="comparison CSV or `studio compare --json` output")
    parser.add_argument("--bench", type=Path, metavar="B", help="benchmark result JSON")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="report .html / .md / .json; with --apply: the fixed .onnx model")
    parser.add_argument("--report", type=Path, metavar="FILE", help="report file when -o names the fixed model")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--device", metavar="NAME", help="roofline device (e.g. 'Ascend 310', 'this computer')")
    parser.add_argument("--remeasure-roof", "--measure-device", dest="remeasure_roof", action="store_true",
                        help="measure this computer's roofs again (ONNX Runtime MatMul/Conv and Relu over working sets "
                             "from 128 KiB to 128 MiB, best of several rounds) instead of the cached measurement, and "
                             "cache them (with the date and this machine's CPU)")
    parser.add_argument("--no-msprof-analyze", action="store_true", help="do not run msprof-analyze on Ascend data")
    parser.add_argument("--no-measure", action="store_true",
                        help="do not try the suggested fixes and settings (A/B timing against the model as it is); "
                             "their gains then stay estimates, rated medium at most")
    parser.add_argument("--measure-budget", type=float, default=10.0, metavar="S",
                        help="seconds each A/B timing of a suggested change may take (default 10)")
    parser.add_argument("--msprof-analyze-out", type=Path, metavar="DIR",
                        help="folder for msprof-analyze's HTML and xlsx (default: the user cache)")
    loop = parser.add_argument_group("closed loop")
    loop.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                      help="data for an input of the model (repeat); default: the profile's, else seeded random")
    loop.add_argument("--input-shape", "--input_shape", action="append", default=[], metavar="NAME=D1,D2,...",
                      help="size of an input's dynamic dims (repeat); default: the shapes the profile used")
    loop.add_argument("--apply", action="store_true", help="apply the automatic fixes to the ONNX model (-o fixed.onnx)")
    loop.add_argument("--fix", action="append", default=[], metavar="NAME",
                      help="apply only these fixes (repeat); default: every exact fix the findings offer")
    loop.add_argument("--allow-accuracy-change", action="store_true",
                      help="also apply fixes that change the numbers (Mish -> LeakyRelu)")
    loop.add_argument("--iterations", type=int, metavar="N", help="profiling iterations (default: the profile's, or 20)")
    loop.add_argument("--warmup", type=int, metavar="K", help="warm-up iterations (default: the profile's, or 3)")
    loop.add_argument("--budget", type=float, default=10.0, metavar="S",
                      help="seconds the interleaved before / after timing may take (default 10; it stops earlier "
                           "once the speed-up is known to ±2 %%)")


def run(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.core.errors import UserError
    from studio.core.jobs import run_job
    from studio.core.serial import to_json
    from studio.tools.advisor import write_report
    from studio.tools.advisor.engine import advise

    if args.measure_budget <= 0:
        raise UserError(f"--measure-budget {args.measure_budget:g} is not a time", "--measure-budget",
                        "Give the seconds each A/B timing may take, e.g. --measure-budget 10 (or --no-measure).")
    if args.remeasure_roof:
        from studio.tools.advisor.roof_cache import this_computer_roofs

        device, origin = run_job(this_computer_roofs(remeasure=True), on_progress=None if args.json else print_progress)
        curve = ", ".join(f"{size / 2**20:g} MiB {bw / 1e9:.0f} GB/s" for size, bw in device.bandwidths or [])
        if not args.json:
            print(f"this computer: {device.fp32_flops / 1e9:.1f} GFLOP/s, {device.bandwidth / 1e9:.1f} GB/s"
                  + (f" (by working set: {curve})" if curve else "") + f"; {origin}")
        if not any((args.model, args.profile, args.accuracy, args.bench)):
            return 0
    report_path = args.report
    fixed = None
    if args.apply:
        if args.output is None or args.output.suffix.lower() != ".onnx":
            raise UserError("--apply needs -o FIXED.onnx", "-o", "Give the path of the fixed model, e.g. -o fixed.onnx.")
        fixed = args.output
    elif args.output is not None:
        report_path = args.output
    progress = None if args.json else print_progress
    report = run_job(advise(args.model, args.profile, args.accuracy, args.bench, args.device,
                            msprof=not args.no_msprof_analyze, msprof_out=args.msprof_analyze_out,
                            measure=False if args.no_measure else None, measure_budget_s=args.measure_budget,
                            remeasure_roof=False),  # measured just above when asked
                     on_progress=progress)
    if fixed is not None:
        from studio.tools.advisor.fixes import FIXES, fixes_for
        from studio.tools.advisor.loop import closed_loop

        model = Path(report.model_path) if report.model_path else None
        if model is None or model.suffix.lower() != ".onnx":
            raise UserError("The closed loop needs an ONNX model", "--model", "Give --model MODEL.onnx.")
        offered = fixes_for(report.findings)
        chosen = args.fix or [f for f in offered if args.allow_accuracy_change or not FIXES[f].changes_accuracy]
        if not chosen:
            raise UserError("No automatic fix applies", model, "The findings offer none"
                            + (f" without --allow-accuracy-change (offered: {', '.join(offered)})" if offered else "."))
        baseline = Path(report.profile_path) if report.profile_path and (Path(report.profile_path) / "studio_profile.json").is_file() else None
        from studio.tools.profiler.local_inputs import parse_input_specs, parse_shape_specs

        result = run_job(closed_loop(model, fixed, chosen, args.allow_accuracy_change, baseline,
                                     args.iterations, args.warmup, inputs=parse_input_specs(args.input),
                                     shapes=parse_shape_specs(args.input_shape), budget_s=args.budget),
                         on_progress=progress)
        report.loop = to_json(result)
    if report_path is not None:
        write_report(report, report_path)
    if args.json:
        print(json.dumps(to_json(report), indent=1, default=str))
    else:
        print(report)
        if report_path is not None:
            print(f"report: {report_path}")
    return 0
