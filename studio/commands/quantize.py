"""``studio quantize MODEL -o OUT.onnx --calib DIR|FILE.npz``: INT8 with ONNX Runtime's static
quantisation, the layers ranked by sensitivity, the fewest rolled back to float for an accuracy
target (delta debugging, compared with a sensitivity-ranked binary search), and FP32, INT8 and the
mixed model measured together (:mod:`studio.ops.quantize`)."""

from __future__ import annotations

import argparse
import json

NAME = "quantize"
HELP = "INT8: calibrate, rank layers by sensitivity, roll back the fewest for a target, measure accuracy and latency"

SHOWN_LAYERS = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.quantize import Request

    add_request_arguments(parser, Request, *Request.SHOWN)
    parser.add_argument("--host", metavar="NAME", help="then run the --ascend folder's AMCT and ATC commands on this "
                        "host (see studio ssh list) and bring the deployable model and the .om back into it")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.core.errors import UserError
    from studio.core.jobs import run_job
    from studio.ops import quantize

    if bool(args.mean) != bool(args.std):
        raise UserError("--mean and --std go together", None, "Give both, e.g. --mean 127.5,127.5,127.5 "
                                                              "--std 127.5,127.5,127.5.")
    if args.max_top1_drop is not None and args.truth is None:
        raise UserError("--max-top1-drop needs --truth", "--truth", "Give a labels CSV: image,label rows.")
    if args.max_map_drop is not None and args.truth is None:
        raise UserError("--max-map-drop needs --truth", "--truth",
                        "Give the pictures' boxes: a folder of VOC XML files or a COCO JSON.")
    for flag, value in (("--max-dice-drop", args.max_dice_drop), ("--max-iou-drop", args.max_iou_drop)):
        if value is not None and args.truth is None:
            raise UserError(f"{flag} needs --truth", "--truth",
                            "Give the pictures' masks: a folder of PNGs named like the pictures, class per pixel.")
    context = None
    if args.host:
        from studio.commands._context import cli_context

        context = cli_context()
    result = run_job(quantize.run(quantize.Request.from_args(args), args.host, context), on_progress=print_progress)
    if args.json:
        print(json.dumps(quantize.result_json(result), indent=1))
        return 0
    print("\n".join(report(result)))
    return 0


def report(result) -> list[str]:
    """The human-readable report: settings, sensitivity, both searches, the measured table, files."""
    from studio.tools.quantize.measure import TASK_METRICS

    s = result.settings
    lines = [f"{result.model.name}: {result.layers} layer(s) quantised by ONNX Runtime ({s.format}, {s.method}"
             f"{', per-channel' if s.per_channel else ''}; op types {','.join(s.op_types)}), calibrated on "
             f"{result.calibration_samples} sample(s)" + (" (ranges reused)" if result.reused_ranges else ""),
             f"target: {result.target}; judged on {result.evaluation_samples} sample(s)"]
    lines += [f"note: {note}" for note in result.notes]
    if result.sensitivity:
        lines += ["", "sensitivity (each layer quantised alone; most sensitive first):",
                  f"  {'layer':<32} {'type':<8} {'1-cos':>10} {'act kurt':>9} {'act MSE':>10} {'w kurt':>8}"]
        for item in result.sensitivity[:SHOWN_LAYERS]:
            act, w = item.activation, item.weight
            lines.append(f"  {item.name[:32]:<32} {item.op_type:<8} {item.error:>10.2e} "
                         f"{act.kurtosis if act else float('nan'):>9.2f} {act.mse if act else float('nan'):>10.2e} "
                         f"{w.kurtosis if w else float('nan'):>8.2f}")
        if len(result.sensitivity) > SHOWN_LAYERS:
            lines.append(f"  ... {len(result.sensitivity) - SHOWN_LAYERS} more (--json lists every layer)")
    lines += ["", "rollback search:"]
    for found in result.searches:
        lines.append(f"  {found.method:<14} {found.size} layer(s) in float, {found.runs} run(s): "
                     + (", ".join(found.rollback) or "none"))
    # the task metrics measured (top-1 shown even when unmeasured, as before; mAP, Dice, IoU when measured)
    metrics = [m for m in TASK_METRICS if m == "top1" or any(getattr(r.accuracy, m) is not None for r in result.table)]
    header = "".join(f" {TASK_METRICS[m]:>8}" for m in metrics)
    lines += ["", f"  {'model':<6} {'in float':>8} {'min cosine':>11}{header}  latency against FP32"]
    for row in result.table:
        cells = "".join(" " + ("-" if getattr(row.accuracy, m) is None else f"{getattr(row.accuracy, m) * 100:.1f}%")
                        .rjust(8) for m in metrics)
        latency = "-" if row.latency is None else _latency(row.latency)
        lines.append(f"  {row.name:<6} {row.rolled_back:>8} {row.accuracy.min_cosine:>11.6f}{cells}  {latency}")
    lines += ["", f"fallback (left in float): {', '.join(result.fallback) or 'none'}",
              f"wrote {result.out} and its calibration ranges {result.ranges}"]
    if result.ascend:
        lines.append(f"wrote {result.ascend['folder']}: amct.cfg, data/, commands.sh "
                     f"(AMCT then ATC -> {result.ascend['om']})")
        if "ran_on" in result.ascend:
            lines.append(f"ran AMCT and ATC on {result.ascend['ran_on']} ({result.ascend['seconds']:.1f} s, in "
                         f"{result.ascend['work']}): {result.ascend['om_local']}, {result.ascend['deploy_model_local']}"
                         f", log {result.ascend['log']}")
    return lines


def _latency(change) -> str:
    """The verdict, the change with its interval and the medians, on one line."""
    return (f"{change.verdict}: {change.change_pct:+.1f} % ({change.change_pct_low:+.1f} % to "
            f"{change.change_pct_high:+.1f} %), {change.base_ms:.3g} -> {change.new_ms:.3g} ms "
            f"({change.rounds} interleaved rounds)")
