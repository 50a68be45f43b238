"""``studio quantize MODEL -o OUT.onnx --calib DIR|FILE.npz``: INT8 with ONNX Runtime's static
quantisation, the layers ranked by sensitivity, the fewest rolled back to float for an accuracy
target (delta debugging, compared with a sensitivity-ranked binary search), and FP32, INT8 and the
mixed model measured together (:mod:`studio.ops.quantize`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "quantize"
HELP = "INT8: calibrate, rank layers by sensitivity, roll back the fewest for a target, measure accuracy and latency"

SHOWN_LAYERS = 10


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from studio.commands.infer import _size, _triple
    from studio.tools.infer.postprocess import HEADS
    from studio.tools.infer.preprocess import PRESETS, RESIZE_MODES
    from studio.tools.quantize.build import COMPUTE_OPS, FORMATS, METHODS

    parser.add_argument("model", type=Path, metavar="MODEL", help="an ONNX model (FP32)")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.onnx",
                        help="the quantised model with the rollback set left in float (written only on success)")
    parser.add_argument("--calib", type=Path, required=True, metavar="DIR|FILE.npz",
                        help="calibration data: a folder of pictures (preprocessed as studio infer does) or an .npz "
                             "with one array per input named after it, samples along the first axis")
    parser.add_argument("--eval", type=Path, metavar="DIR|FILE.npz",
                        help="held-out samples the target is judged on (default: the calibration samples)")
    parser.add_argument("--method", choices=METHODS, default="minmax", help="calibration method (default minmax)")
    parser.add_argument("--per-channel", action="store_true", help="quantise weights per output channel")
    parser.add_argument("--format", choices=FORMATS, default="qdq", help="ONNX form of the INT8 model (default qdq)")
    parser.add_argument("--op-types", type=_names, default=list(COMPUTE_OPS), metavar="A,B",
                        help=f"op types to quantise (default {','.join(COMPUTE_OPS)}: the layers AMCT quantises)")
    parser.add_argument("--exclude", action="append", metavar="NODE", help="keep this node in float (repeatable)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--min-cosine", type=float, metavar="X",
                        help=f"target: every output's cosine against FP32 >= X on every sample (default 0.99)")
    target.add_argument("--max-top1-drop", type=float, metavar="P",
                        help="target: top-1 on the labelled pictures at most P points below FP32 (needs --truth)")
    target.add_argument("--max-map-drop", type=float, metavar="P",
                        help="target: a detector's mAP@0.5 on the pictures with boxes at most P points below FP32 "
                             "(needs --truth boxes)")
    target.add_argument("--max-dice-drop", type=float, metavar="P",
                        help="target: a segmenter's mean Dice at most P points below FP32 (needs --truth masks)")
    target.add_argument("--max-iou-drop", type=float, metavar="P",
                        help="target: a segmenter's mean IoU at most P points below FP32 (needs --truth masks)")
    parser.add_argument("--truth", type=Path, metavar="LABELS.csv|BOXES|MASKS",
                        help="ground truth, as studio infer --truth: image,label rows; a folder of VOC XML or a "
                             "COCO JSON; a folder of mask PNGs named like the pictures")
    parser.add_argument("--labels", type=Path, metavar="FILE", help="class names, one per line (labels by name)")
    parser.add_argument("--task", choices=("classify", "detect", "segment"),
                        help="whose preprocessing defaults apply to pictures (default: the target's task, else "
                             "classify)")
    parser.add_argument("--head", choices=HEADS, help="detection output layout (as studio infer; default: guessed)")
    parser.add_argument("--conf", type=float, default=0.25, help="detection score threshold (default 0.25)")
    parser.add_argument("--iou", type=float, default=0.45, help="detection NMS IoU threshold (default 0.45)")
    parser.add_argument("--preset", choices=sorted(PRESETS), help="normalisation of pictures (as studio infer)")
    parser.add_argument("--mean", type=_triple, metavar="R,G,B", help="per-channel mean on 0..255 pixels")
    parser.add_argument("--std", type=_triple, metavar="R,G,B", help="per-channel std on 0..255 pixels")
    parser.add_argument("--resize", choices=RESIZE_MODES, help="how pictures are resized (as studio infer)")
    parser.add_argument("--size", type=_size, metavar="HxW", help="input size, for models with dynamic dims")
    parser.add_argument("--bgr", action="store_true", help="feed BGR instead of RGB")
    parser.add_argument("--layout", choices=("NCHW", "NHWC"), help="default: from the model's input shape")
    parser.add_argument("--ranges", type=Path, metavar="FILE",
                        help="calibration ranges: saved here, reused when made from the same samples and method "
                             "(default OUT.ranges.json)")
    parser.add_argument("--budget", type=float, default=3.0, metavar="S",
                        help="seconds of interleaved timing per comparison (default 3)")
    parser.add_argument("--no-timing", action="store_true", help="skip the latency comparison")
    parser.add_argument("--ascend", type=Path, metavar="DIR",
                        help="write AMCT's configuration (the rollback set as skip_layers), the samples as .bin, "
                             "and commands.sh (amct_onnx calibration, then atc) into DIR")
    parser.add_argument("--soc", metavar="SOC", help="ATC --soc_version in commands.sh (default Ascend310P3, said)")
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
