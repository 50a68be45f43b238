"""``studio convert MODEL -o OUT.onnx [...]`` and ``studio convert MODEL --atc --soc-version X [...]``.

Local: converts an ONNX model (input shapes, AIPP, fusions, FP16) and writes a JSON report.
``--atc``: builds the exact ``atc`` command from the same options, checked against ATC's rules;
``--print-command`` prints it; ``--host NAME`` runs it on that SSH host (inputs uploaded, the .om
downloaded); otherwise it runs ATC when it is installed here. Exit 1 when ATC itself failed.
"""

from __future__ import annotations

import argparse
import json

from studio.core.serial import to_json

NAME = "convert"
HELP = "convert a model: local ONNX (shapes, AIPP, fusions, FP16) or the ATC command for the NPU"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Each option is declared once on ConvertOptions (its ATC spelling too); this is their order.
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.convert import Request
    from studio.tools.convert.option_words import ATC_GROUP
    from studio.tools.convert.options import ConvertOptions

    add_request_arguments(parser, ConvertOptions, "model", "output", "input_shape", "output_type", "insert_op_conf",
                          "fusion_switch_file", "keep_fp32_ops", "stamp_source", "stamp_report", "fusions",
                          "keep_io_types", "report", "validate", "validate_inputs", "atol", "rtol", "thresholds",
                          "validate_image")
    atc = parser.add_argument_group(ATC_GROUP)
    atc.add_argument("--atc", action="store_true", help="build (and run, if installed) the ATC command instead")
    atc.add_argument("--print-command", "--print_command", action="store_true", help="print the checked atc command and exit")
    atc.add_argument("--host", metavar="NAME", help="run ATC on this SSH host (see `studio ssh add`): inputs are "
                     "uploaded, the .om comes back to -o")
    add_request_arguments(parser, ConvertOptions, "soc_version", "framework", "weight", "input_format",
                          "op_debug_level", "log", "precision_mode", "out_nodes", "dynamic_batch_size",
                          "dynamic_image_size", "dynamic_dims", "extra_args")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    add_request_arguments(parser, Request)  # --provider, the host engine's options


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

    result = run_op(convert, convert.Request.from_args(args, options=options), args.host, args.json)
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
