"""``studio convert MODEL -o OUT.onnx [...]`` and ``studio convert MODEL --atc --soc-version X [...]``.

Local: converts an ONNX model (input shapes, AIPP, fusions, FP16) and writes a JSON report.
``--atc``: builds the exact ``atc`` command from the same options, checked against ATC's rules;
``--print-command`` prints it; ``--host NAME`` runs it on that SSH host (inputs uploaded, the .om
downloaded); otherwise it runs ATC when it is installed here. Exit 1 when ATC itself failed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "convert"
HELP = "convert a model: local ONNX (shapes, AIPP, fusions, FP16) or the ATC command for the NPU"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, metavar="MODEL", help="model file (.onnx; with --atc also .pb, .prototxt, .air)")
    parser.add_argument("-o", "--output", type=Path, help="output model (.onnx locally; with --atc the .om path)")
    parser.add_argument("--input-shape", help='fix input shapes: "name:1,3,224,224;name2:..."')
    parser.add_argument("--output-type", help="FP32 or FP16 (ATC: also UINT8, INT8, ... or node:index:type)")
    parser.add_argument("--insert-op-conf", type=Path, metavar="AIPP_CFG", help="AIPP configuration file")
    parser.add_argument("--fusion-switch-file", type=Path, help="ATC fusion switch file (per-pass on/off)")
    parser.add_argument("--keep-fp32", action="append", default=[], metavar="OP_OR_NODE",
                        help="op type or node name that stays FP32 under FP16 (repeatable, or comma separated)")
    parser.add_argument("--fp16-io", action="store_true", help="FP16 inputs and outputs too (default: keep FP32 I/O)")
    parser.add_argument("--report", type=Path, help="where to write the JSON report (default OUT.report.json)")
    parser.add_argument("--validate", action="store_true", help="compare with the original on seeded random input")
    parser.add_argument("--validate-image", type=Path, help="compare on this picture (through the AIPP pre-processing)")
    atc = parser.add_argument_group("ATC (NPU)")
    atc.add_argument("--atc", action="store_true", help="build (and run, if installed) the ATC command instead")
    atc.add_argument("--print-command", action="store_true", help="print the checked atc command and exit")
    atc.add_argument("--host", metavar="NAME", help="run ATC on this SSH host (see `studio ssh add`): inputs are "
                     "uploaded, the .om comes back to -o")
    atc.add_argument("--soc-version", help="target chip, e.g. Ascend310, Ascend310P3, Ascend910B1")
    atc.add_argument("--framework", type=int, choices=[0, 1, 3, 5], help="0 Caffe, 1 MindSpore, 3 TensorFlow, 5 ONNX")
    atc.add_argument("--weight", type=Path, help="Caffe .caffemodel")
    atc.add_argument("--input-format", help="NCHW, NHWC, ND, NCDHW, NDHWC")
    atc.add_argument("--op-debug-level", type=int, help="0..4")
    atc.add_argument("--log", help="debug, info, warning, error, null")
    atc.add_argument("--precision-mode", help="force_fp16, allow_mix_precision, ...")
    parser.add_argument("--out-nodes", help='outputs to keep: "node:0;node2:0" or ONNX tensor names (local and ATC)')
    atc.add_argument("--dynamic-batch-size", help='"1,2,4,8"')
    atc.add_argument("--dynamic-image-size", help='"h1,w1;h2,w2"')
    atc.add_argument("--dynamic-dims", help='"d1,d2;d3,d4"')
    atc.add_argument("--extra", default="", metavar="ARGS",
                     help='additional ATC arguments; write it with "=": --extra="--op_select_implmode=high_precision"')
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def options_from_args(args: argparse.Namespace):
    """The ConvertOptions these arguments describe."""
    from studio.tools.convert.atc_command import split_extra_args
    from studio.tools.convert.options import ConvertOptions

    keep = [item.strip() for value in args.keep_fp32 for item in value.split(",") if item.strip()]
    return ConvertOptions(
        model=args.model, output=args.output, framework=args.framework, weight=args.weight,
        soc_version=args.soc_version, input_format=args.input_format, input_shape=args.input_shape,
        output_type=args.output_type, insert_op_conf=args.insert_op_conf, fusion_switch_file=args.fusion_switch_file,
        op_debug_level=args.op_debug_level, log=args.log, precision_mode=args.precision_mode, out_nodes=args.out_nodes,
        dynamic_batch_size=args.dynamic_batch_size, dynamic_image_size=args.dynamic_image_size,
        dynamic_dims=args.dynamic_dims, extra_args=split_extra_args(args.extra), keep_fp32_ops=keep,
        keep_io_types=not args.fp16_io, validate=args.validate, validate_image=args.validate_image, report=args.report)


def run(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.errors import UserError
    from studio.jobs import run_job

    options = options_from_args(args)
    if args.atc or args.print_command:
        from studio.tools.convert.atc_command import build_atc_argv, preview

        if options.output is None:
            options.output = options.model.with_suffix("")
        argv = build_atc_argv(options)
        if args.print_command:
            print(json.dumps({"argv": argv, "command": preview(argv)}, indent=2) if args.json else preview(argv))
            return 0
        if args.host:
            return _run_atc(options, args, args.host)
        import shutil

        if shutil.which("atc") is None:
            from studio.errors import ToolUnavailable

            print(preview(argv))
            raise ToolUnavailable("atc", "ATC (CANN toolkit) is needed for --atc and is not on PATH on this machine",
                                  "Run it on an Ascend host with --host NAME (add one with `studio ssh add`), "
                                  "source CANN's set_env.sh here, or run the command above on the host.")
        return _run_atc(options, args, None)
    if args.host:
        raise UserError("--host runs ATC remotely and needs --atc", "--host", "Add --atc --soc-version CHIP.")
    if options.output is None:
        raise UserError("No output path given", "-o/--output", "Give -o OUT.onnx (or --atc for the NPU).")
    from studio.tools.convert.convert import convert_model

    report = run_job(convert_model(options), on_progress=print_progress)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.summary())
    if report.validation and not report.validation["passed"]:
        return 1
    return 0


def _run_atc(options, args: argparse.Namespace, host: str | None) -> int:
    """``--atc`` here or with ``--host NAME``: run ATC on that target, streaming its output; 1 when ATC failed."""
    import sys

    from studio.commands._context import cli_context
    from studio.jobs import run_job
    from studio.targets import target_for
    from studio.tools.convert.atc_run import AtcFailed, run_atc

    target = target_for(cli_context(), host)
    stream = sys.stderr if args.json else sys.stdout  # --json keeps stdout for the result

    def show(step) -> None:
        print(step.message, file=stream, flush=True)

    try:
        result = run_job(run_atc(options, target), on_progress=show)
    except AtcFailed as exc:
        if args.json:
            print(json.dumps(exc.result.to_dict(), indent=2))
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result.to_dict(), indent=2) if args.json else f"wrote {result.local_om} (ATC on {target.where})")
    return 0
