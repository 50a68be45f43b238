"""``studio accuracy reduce|precision MODEL -o DIR``: a minimal FP16 repro, or the smallest set of ops to keep in FP32;
``studio accuracy compare-models ORIGINAL CONVERTED``: a converted model against its original, op by op."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from studio.core.errors import UserError
from studio.core.serial import to_json

NAME = "accuracy"
HELP = ("reduce a model that fails in FP16 to a minimal repro, find the fewest ops to keep in FP32, or compare a "
        "converted model with its original")
TARGETS = ("fp16-sim", "fp16", "om")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from studio.core.thresholds import add_threshold_arguments

    sub = parser.add_subparsers(dest="accuracy_command", metavar="{reduce,precision,compare-models}", required=True)
    reduce = sub.add_parser("reduce", help="cut the first op that goes wrong in FP16, fed with FP32 tensors, down "
                                           "to the fewest ops that still fail")
    reduce.add_argument("model", type=Path, metavar="MODEL")
    reduce.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                        help="folder for model.onnx, inputs.npz, golden_outputs.npz, commands.sh, report.md")
    reduce.add_argument("--target", choices=TARGETS, default="fp16-sim",
                        help="what to check against FP32: fp16-sim (every op's output rounded through FP16), "
                             "fp16 (converted to an FP16 ONNX here, every op dumped), om (ATC and an NPU dump on "
                             "--host)")
    _host_arguments(reduce)
    _input_arguments(reduce)
    add_threshold_arguments(reduce)
    reduce.add_argument("--json", action="store_true", help="print machine-readable JSON")
    precision = sub.add_parser("precision", help="the smallest set of ops to keep in FP32 so the model passes in "
                                                 "FP16; written for studio convert and for ATC; the three builds timed")
    precision.add_argument("model", type=Path, metavar="MODEL")
    precision.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                           help="folder for keep_fp32.txt, keep_dtype.cfg, modify_mixlist.json, the builds, "
                                "precision.json")
    precision.add_argument("--target", choices=TARGETS, default="fp16-sim",
                           help="what must pass: fp16-sim (every op's output rounded through FP16), fp16 (the "
                                "FP16 ONNX that studio convert --keep-fp32 writes, every op dumped), om (ATC with "
                                "--keep_dtype and an NPU dump on --host)")
    _host_arguments(precision)
    _input_arguments(precision)
    add_threshold_arguments(precision)
    precision.add_argument("--no-latency", action="store_true", help="skip building and timing the three models")
    precision.add_argument("--budget", type=float, default=10.0, metavar="S",
                           help="time budget of each interleaved A/B (default 10 s)")
    precision.add_argument("--json", action="store_true", help="print machine-readable JSON")
    _compare_models_arguments(sub)


def _compare_models_arguments(sub) -> None:
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.compare_models import Request

    models = sub.add_parser("compare-models", help="dump an original model and its converted one on the same input "
                                                   "and compare them op by op (the Converter's Compare with original)")
    add_request_arguments(models, Request, "model", "converted", "output", "inputs", "shapes", "seed")
    models.add_argument("--check", action="store_true", help="exit 1 when the verdict on the model outputs is FAIL")
    models.add_argument("--json", action="store_true", help="print machine-readable JSON")
    models.add_argument("--host", metavar="NAME", help="make both dumps with Studio's engine on this host (see "
                        "studio ssh list); they come back and are compared here")
    add_request_arguments(models, Request)  # the thresholds, --provider, the host engine's options


def _input_arguments(parser: argparse.ArgumentParser) -> None:
    """--input, --input-shape and --seed, spelled and read as on every command that runs a model."""
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.inputs import ModelRun

    add_request_arguments(parser, ModelRun, "inputs", "shapes", "seed")


def _host_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", metavar="NAME", help="--target om: the Ascend host ATC and the dump run on "
                                                       "(local: this computer's CANN toolkit)")
    parser.add_argument("--soc-version", default="Ascend310", metavar="CHIP",
                        help="--target om: ATC's --soc_version (default Ascend310)")


def run(args: argparse.Namespace) -> int:
    if args.accuracy_command == "compare-models":
        from studio.commands._engine_host import run_check
        from studio.ops import compare_models

        return run_check(compare_models, args)
    from studio.tools.accuracy.metrics import Thresholds

    from studio.core.thresholds import thresholds_from_args

    thresholds = Thresholds.of(thresholds_from_args(args))
    with _runner(args) as runner:
        if args.accuracy_command == "precision":
            return _precision(args, thresholds, runner)
        return _reduce(args, thresholds, runner)


def _reduce(args: argparse.Namespace, thresholds, runner) -> int:
    from studio.commands._inputs import model_feeds
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.accuracy.reduce import reduce_fp16

    result = run_job(reduce_fp16(args.model, args.output, model_feeds(args), args.seed, thresholds,
                                 runner=runner), on_progress=None if args.json else print_progress)
    if args.json:
        print(json.dumps({**to_json(result), **_round_trips(runner)}, indent=1))
        return 0
    if result.diagnosis is not None:
        print(result.diagnosis)
    print(f"{args.model.name}: first diverging op {result.first_op} ({result.first_op_type}): {result.reason}")
    print(f"repro: {len(result.ops)} of {result.model_ops:,} ops ({', '.join(result.ops)}), fed at "
          f"{', '.join(result.inputs) or 'the model inputs'}; {result.target_runs} target runs"
          + (f", {runner.round_trips} host round trips" if hasattr(runner, "round_trips") else ""))
    for note in result.notes:
        print(f"  {note}")
    print(f"wrote {result.folder}/ (model.onnx, inputs.npz, golden_outputs.npz, commands.sh, report.md)")
    return 0


def _precision(args: argparse.Namespace, thresholds, runner) -> int:
    from studio.commands._inputs import model_feeds
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.accuracy.precision import find_fp32_set

    progress = None if args.json else print_progress
    inputs = model_feeds(args)
    result = run_job(find_fp32_set(args.model, args.output, inputs, args.seed, thresholds, runner=runner),
                     on_progress=progress)
    _check_default_build(args, result, inputs, thresholds, progress)
    data = {**to_json(result), **_round_trips(runner),
            "verified_on_default_build": result.default_build["verified"] if result.default_build else None}
    if not args.no_latency and args.target == "om":  # the builds below are timed here, as ONNX
        data["builds_note"] = ("the OM builds are not timed here: build them with atc --keep_dtype=keep_dtype.cfg "
                               "and time them on the host with studio bench")
        print(f"note: {data['builds_note']}", file=sys.stderr)
    elif not args.no_latency:
        from studio.commands._precision_builds import build_and_time

        data["builds"] = run_job(build_and_time(args.model, args.output, result.keep, inputs, args.seed,
                                                thresholds, args.budget, runner), on_progress=progress)
        for build in data["builds"]:  # the timed file is the default-pass build checked above
            if build["build"] == "found set" and data["verified_on_default_build"] is not None:
                build["verified_on_this_build"] = data["verified_on_default_build"]
    (args.output / "precision.json").write_text(json.dumps({"model": str(args.model), **data}, indent=1))
    (args.output / "report.md").write_text(_report_md(args.model, data, runner.label), encoding="utf-8")
    verdict = _default_build_line(data)
    if args.json:
        if verdict and not data["verified_on_default_build"]:
            print(f"warning: {verdict}", file=sys.stderr)
        print(json.dumps(data, indent=1))
        return 0
    if result.diagnosis is not None:
        print(f"before: {result.diagnosis}")
    print(f"{args.model.name}: keep {len(result.keep)} op(s) in FP32 ({', '.join(result.keep) or 'none'}); "
          f"{'minimal: removing any one fails' if result.minimal else 'not shown minimal'}; "
          f"{result.candidates} candidates, {result.checks} checks, {result.target_runs} target runs"
          + (f", {runner.round_trips} host round trips" if hasattr(runner, "round_trips") else ""))
    for note in result.notes:
        print(f"  {note}")
    if verdict:
        print(f"  {verdict}")
    for build in data.get("builds", []):
        timing = build.get("latency")
        text = (f"{timing['new_ms']:.3f} ms vs {timing['base_ms']:.3f} ms in FP32: {timing['verdict']} "
                f"({timing['change_pct']:+.1f} %, 95 % CI {(timing['ratio_low'] - 1) * 100:+.1f} to "
                f"{(timing['ratio_high'] - 1) * 100:+.1f} %)" if timing else "the baseline")
        accuracy = build["accuracy"] if build.get("verified_on_this_build") is not False else \
            "FAILS on this build (passed with the fusion passes off)"
        print(f"  {build['build']:<10} accuracy ({runner.label}): {accuracy:<40} latency: {text}")
    print(f"wrote {args.output}/keep_fp32.txt (studio convert --keep-fp32), keep_dtype.cfg (atc --keep_dtype), "
          "modify_mixlist.json (atc --modify_mixlist), precision.json, report.md")
    return 0


def _check_default_build(args, result, inputs, thresholds, progress) -> None:
    """For ``--target fp16``: the found set judged on the build with the converter's default passes
    (the one a user ships and the latency table times), since the search judged builds with the
    passes off (``result.default_build``); the other targets are not checked (see docs/accuracy.md)."""
    if args.target != "fp16":
        return
    from studio.core.jobs import run_job
    from studio.ops.fp16_target import check_default_build

    result.default_build = run_job(check_default_build(args.model, args.output / "model_fp16_keep.onnx", result.keep,
                                                       inputs, args.seed, thresholds), on_progress=progress)


def _default_build_line(data: dict) -> str:
    """One line on the default-pass build's check, or '' when it was not made."""
    from studio.ops.fp16_target import describe_default_build

    check = data.get("default_build_check")
    return describe_default_build(check) if check else ""


def _report_md(model: Path, data: dict, target_label: str) -> str:
    """report.md of the search: the set, whether it holds on the default-pass build, the builds table."""
    from studio.ops.fp16_target import number

    keep = data.get("keep_fp32", [])
    lines = [f"# FP32 set for {model.name}", "",
             f"Target: {target_label}. Keep {len(keep)} op(s) in FP32: {', '.join(f'`{k}`' for k in keep) or 'none'}"
             f" ({'minimal: removing any one fails' if data.get('minimal') else 'not shown minimal'}; "
             f"{data.get('candidates')} candidates, {data.get('checks')} checks, {data.get('target_runs')} target runs).",
             ""]
    verdict = _default_build_line(data)
    if verdict:
        lines += [("**" + verdict[0].upper() + verdict[1:] + "**") if not data["verified_on_default_build"]
                  else verdict[0].upper() + verdict[1:], ""]
        for out, o in data["default_build_check"]["outputs"].items():
            if "cosine" in o:
                lines.append(f"- `{out}`: {o['verdict']}; cosine {number(o['cosine'])}, relative Euclidean "
                             f"{number(o['rel_euclidean'])}, max abs error {number(o['max_abs_err'])}")
        lines.append("")
    elif data.get("verified_on_default_build") is None:
        lines += ["Not checked on a converted build with the converter's default passes (only `--target fp16` "
                  "searches on converted builds).", ""]
    builds = data.get("builds", [])
    if builds:
        lines += ["| build | accuracy (search target) | latency |", "|---|---|---|"]
        for build in builds:
            timing = build.get("latency")
            accuracy = build["accuracy"] if build.get("verified_on_this_build") is not False else \
                "**fails on this build** (passed with the fusion passes off)"
            lines.append(f"| {build['build']} | {accuracy} | "
                         f"{timing['describe'] if timing else 'the baseline'} |")
        lines.append("")
    return "\n".join(lines)


@contextlib.contextmanager
def _runner(args: argparse.Namespace):
    """The target the search checks against FP32, as ``--target`` names it (for ``om``, on the
    host's one connection, closed at the end)."""
    if args.target == "om":
        from studio.commands._context import cli_context
        from studio.ops.om_target import OmRunner
        from studio.runs.where import target_for_host

        if not args.host:
            raise UserError("--target om converts with ATC and dumps on an Ascend host", "--host",
                            "Add --host NAME (a host from studio ssh add; local: this computer's CANN toolkit).")
        with target_for_host(cli_context(), args.host) as target:
            yield OmRunner(target, args.soc_version)
        return
    if args.host:
        raise UserError(f"--host is for --target om; --target {args.target} runs here", "--host",
                        "Drop --host, or add --target om.")
    if args.target == "fp16":
        from studio.ops.fp16_target import Fp16OnnxRunner

        yield Fp16OnnxRunner()
        return
    from studio.tools.accuracy.fp16_runs import SimRunner

    yield SimRunner()


def _round_trips(runner) -> dict:
    """``host_round_trips`` for a target on a host (uploads, runs, fetches)."""
    return {"host_round_trips": runner.round_trips} if hasattr(runner, "round_trips") else {}
