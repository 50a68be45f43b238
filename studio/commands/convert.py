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

from studio.core.serial import to_json

NAME = "convert"
HELP = "convert a model: local ONNX (shapes, AIPP, fusions, FP16) or the ATC command for the NPU"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # ATC users type ATC's spellings (--input_shape, --soc_version, --model=...): each option also
    # answers to its ATC name, listed after the studio one.
    parser.add_argument("model", type=Path, nargs="?", metavar="MODEL",
                        help="model file (.onnx; with --atc also .pb, .prototxt, .air); or --model=FILE as in ATC")
    parser.add_argument("--model", type=Path, dest="model_option", metavar="MODEL", help=argparse.SUPPRESS)
    parser.add_argument("-o", "--output", type=Path, help="output model (.onnx locally; with --atc the .om path)")
    parser.add_argument("--input-shape", "--input_shape", action="append", default=[],
                        help='fix input shapes: "name:1,3,224,224;name2:..." (ATC) or name=1,3,224,224 (repeatable), '
                             "as the other commands take it")
    parser.add_argument("--output-type", "--output_type", help="FP32 or FP16 (ATC: also UINT8, INT8, ... or node:index:type)")
    parser.add_argument("--insert-op-conf", "--insert_op_conf", type=Path, metavar="AIPP_CFG", help="AIPP configuration file")
    parser.add_argument("--fusion-switch-file", "--fusion_switch_file", type=Path,
                        help="ATC fusion switch file (per-pass on/off)")
    parser.add_argument("--keep-fp32", "--keep_fp32", action="append", default=[], metavar="OP_OR_NODE",
                        help="op type or node name that stays FP32 under FP16 (repeatable, or comma separated)")
    # Set by a conversion run on a host: the local paths the converted model's metadata should name.
    parser.add_argument("--stamp-source", help=argparse.SUPPRESS)
    parser.add_argument("--stamp-report", help=argparse.SUPPRESS)
    parser.add_argument("--pass", dest="passes", action="append", default=[], metavar="NAME=on|off",
                        help="switch one of Studio's local passes on or off (repeatable; all are on by default, "
                             "after --fusion-switch-file): " + ", ".join(_pass_names()))
    parser.add_argument("--fp16-io", "--fp16_io", action="store_true", help="FP16 inputs and outputs too (default: keep FP32 I/O)")
    parser.add_argument("--report", type=Path, help="where to write the JSON report (default OUT.report.json)")
    parser.add_argument("--validate", action="store_true",
                        help="compare with the original in ONNX Runtime (seeded random input unless --input gives data)")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                        help="validation data for a model input (repeatable; implies --validate)")
    from studio.tools.convert.options import TOLERANCES

    def short(value: float) -> str:  # 1e-4, not 0.0001
        return f"{value:.0e}".replace("e-0", "e-")

    (atol32, rtol32), (atol16, rtol16) = TOLERANCES["FP32"], TOLERANCES["FP16"]
    parser.add_argument("--atol", type=float,
                        help=f"validation: absolute tolerance (default {short(atol32)}, FP16 {short(atol16)})")
    parser.add_argument("--rtol", type=float, help=f"validation: relative tolerance (default {short(rtol32)}, FP16 "
                        f"{short(rtol16)}); an element fails only when it is beyond both")
    from studio.core.thresholds import add_threshold_arguments

    add_threshold_arguments(parser)
    parser.add_argument("--validate-image", "--validate_image", type=Path,
                        help="validate on this picture, fed through the AIPP pre-processing (needs --insert-op-conf)")
    atc = parser.add_argument_group("ATC (NPU)")
    atc.add_argument("--atc", action="store_true", help="build (and run, if installed) the ATC command instead")
    atc.add_argument("--print-command", "--print_command", action="store_true", help="print the checked atc command and exit")
    atc.add_argument("--host", metavar="NAME", help="run ATC on this SSH host (see `studio ssh add`): inputs are "
                     "uploaded, the .om comes back to -o")
    atc.add_argument("--soc-version", "--soc_version", help="target chip, e.g. Ascend310, Ascend310P3, Ascend910B1")
    atc.add_argument("--framework", type=int, choices=[0, 1, 3, 5], help="0 Caffe, 1 MindSpore, 3 TensorFlow, 5 ONNX")
    atc.add_argument("--weight", type=Path, help="Caffe .caffemodel")
    atc.add_argument("--input-format", "--input_format", help="NCHW, NHWC, ND, NCDHW, NDHWC")
    atc.add_argument("--op-debug-level", "--op_debug_level", type=int, help="0..4")
    atc.add_argument("--log", help="debug, info, warning, error, null")
    atc.add_argument("--precision-mode", "--precision_mode", help="force_fp16, allow_mix_precision, ...")
    parser.add_argument("--out-nodes", "--out_nodes", help='outputs to keep: "node:0;node2:0" or ONNX tensor names (local and ATC)')
    atc.add_argument("--dynamic-batch-size", "--dynamic_batch_size", help='"1,2,4,8"')
    atc.add_argument("--dynamic-image-size", "--dynamic_image_size", help='"h1,w1;h2,w2"')
    atc.add_argument("--dynamic-dims", "--dynamic_dims", help='"d1,d2;d3,d4"')
    atc.add_argument("--extra", default="", metavar="ARGS",
                     help='additional ATC arguments; write it with "=": --extra="--op_select_implmode=high_precision"')
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    from studio.commands._engine_host import add_engine_arguments, add_provider_argument

    add_provider_argument(parser)
    add_engine_arguments(parser)


def _pass_names() -> tuple[str, ...]:
    from studio.tools.convert.passes import PASS_NAMES

    return PASS_NAMES


def options_from_args(args: argparse.Namespace):
    """The ConvertOptions these arguments describe (:func:`studio.ops.convert.options_from_args`)."""
    from studio.ops.convert import options_from_args as from_args

    return from_args(args)


def run(args: argparse.Namespace) -> int:
    from studio.commands._spelling import cli_error
    from studio.core.errors import UserError

    try:
        return _run(args)
    except UserError as exc:  # hints name options as this command line spells them
        raise cli_error(exc) from exc


def _run(args: argparse.Namespace) -> int:
    from studio.commands._spelling import cli_text
    from studio.core.errors import UserError
    from studio.ops.engine import EngineOptions

    options = options_from_args(args)
    if (args.atc or args.print_command) and options.fusions:
        raise UserError("--pass switches Studio's local passes; ATC's own fusion passes are switched with "
                        "--fusion-switch-file", "--pass", "Drop --pass, or convert locally (without --atc).")
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
            from studio.core.errors import ToolUnavailable

            print(preview(argv))
            raise ToolUnavailable("atc", "ATC (CANN toolkit) is needed for --atc and is not on PATH on this machine",
                                  "Run it on an Ascend host with --host NAME (add one with `studio ssh add`), "
                                  "source CANN's set_env.sh here, or run the command above on the host.")
        return _run_atc(options, args, None)
    from studio.commands._engine_host import run_op
    from studio.ops import convert

    result = run_op(convert, convert.Request(options, list(args.provider), EngineOptions.from_args(args)), args.host,
                    args.json)
    print(json.dumps(result.to_json(), indent=2) if args.json else cli_text(result.text()))
    return 0 if result.passed else 1


def _run_atc(options, args: argparse.Namespace, host: str | None) -> int:
    """``--atc`` here or with ``--host NAME``: run ATC on that target, streaming its output; 1 when ATC failed."""
    import sys

    from studio.commands._context import cli_context
    from studio.core.jobs import run_job
    from studio.ops import atc

    stream = sys.stderr if args.json else sys.stdout  # --json keeps stdout for the result

    def show(step) -> None:
        print(step.message, file=stream, flush=True)

    try:
        result = run_job(atc.run(atc.Request(options), host, cli_context() if host else None), on_progress=show)
    except atc.AtcFailed as exc:
        if args.json:
            print(json.dumps(to_json(exc.result), indent=2))
        print(f"error: {exc}", file=sys.stderr)
        return 1
    where = "this computer" if host is None else host
    print(json.dumps(to_json(result), indent=2) if args.json else f"wrote {result.local_om} (ATC on {where})")
    return 0
