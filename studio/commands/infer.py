"""``studio infer MODEL IMAGES -o OUT --task classify|detect|segment [--host NAME]``: a model over a
folder of pictures (an .onnx here with ONNX Runtime or on a host with Studio's engine; an .om with
msame or ais_bench on a host, pre- and post-processing here; :mod:`studio.ops.infer`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


NAME = "infer"
HELP = "run a model over a folder of pictures: top-k, boxes or masks, metrics against ground truth, overlays"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from studio.tools.infer.postprocess import HEADS
    from studio.tools.infer.preprocess import PRESETS, RESIZE_MODES
    from studio.tools.infer.words import parse_size, parse_triple

    parser.add_argument("model", type=Path, metavar="MODEL", help="an ONNX model, or an .om (run with --tool there)")
    parser.add_argument("images", type=Path, metavar="IMAGES", help="a folder of pictures (or one picture)")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="OUT",
                        help="folder for results.csv, results.json and overlays/")
    parser.add_argument("--task", choices=("classify", "detect", "segment"),
                        help="what the model answers (default: from its first output's shape, and said: "
                             "[N, C, H, W] segment, [N, C] classify, [N, boxes, values] detect)")
    parser.add_argument("--labels", type=Path, metavar="FILE", help="class names, one per line")
    parser.add_argument("--truth", type=Path, metavar="DIR|FILE",
                        help="ground truth: a labels CSV (classify), a folder of VOC XML or a COCO JSON (detect), "
                             "a folder of mask PNGs (segment)")
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="normalisation: unit (0..1), symmetric (-1..1), imagenet, raw (0..255); default per task")
    parser.add_argument("--mean", type=parse_triple, metavar="R,G,B", help="per-channel mean on 0..255 pixels")
    parser.add_argument("--std", type=parse_triple, metavar="R,G,B", help="per-channel std on 0..255 pixels")
    parser.add_argument("--resize", choices=RESIZE_MODES, help="default: center-crop (classify), letterbox "
                                                               "(detect), stretch (segment)")
    parser.add_argument("--size", type=parse_size, metavar="HxW", help="input size, for models with dynamic dims")
    parser.add_argument("--bgr", action="store_true", help="feed BGR (OpenCV order) instead of RGB")
    parser.add_argument("--layout", choices=("NCHW", "NHWC"), help="default: from the model's input shape")
    parser.add_argument("--head", choices=HEADS, help="detection output layout (default: guessed, and said)")
    parser.add_argument("--conf", type=float, default=0.25, help="detection score threshold (default 0.25)")
    parser.add_argument("--iou", type=float, default=0.45, help="NMS IoU threshold (default 0.45)")
    parser.add_argument("--top", type=int, default=5, help="classes listed per picture (default 5)")
    parser.add_argument("--no-overlays", action="store_true", help="do not write overlay pictures")
    parser.add_argument("--json", action="store_true", help="print one entry per picture and the summary as JSON")
    parser.add_argument("--host", metavar="NAME", help="run on this host (see studio ssh list): an .om with msame or "
                        "ais_bench (pictures preprocessed and answers scored here), an .onnx with Studio's engine")
    parser.add_argument("--tool", choices=("msame", "ais_bench"), default="msame",
                        help="what runs an .om (default msame); found on the host's PATH after its toolkit's set_env.sh")
    parser.add_argument("--device", type=int, default=0, metavar="ID", help="NPU device id for an .om (default 0)")
    from studio.commands._engine_host import add_engine_arguments, add_provider_argument

    add_provider_argument(parser)
    add_engine_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from studio.commands._engine_host import run_op
    from studio.core.errors import UserError
    from studio.ops import infer

    if bool(args.mean) != bool(args.std):
        raise UserError("--mean and --std go together", None,
                        "Give both, e.g. --mean 123.7,116.3,103.5 --std 58.4,57.1,57.4.")
    request = infer.Request.from_args(args)
    outcome = run_op(infer, request, args.host, args.json)
    if args.json:
        print(json.dumps(outcome.to_json(), indent=1))
        return 0
    result = outcome.infer
    for note in result.notes:
        print(note)
    s = result.summary
    print(f"{s['images']:,} pictures ({s['failed']} failed) in {s['wall_s']} s, {s['images_per_s']} pictures/s, "
          f"inference {s['inference_ms_mean']} ms each")
    for key in ("top1_accuracy", "top5_accuracy", "dice_mean", "iou_mean", "map50"):
        if key in s:
            print(f"{key}: {s[key]:.4f} over {s['scored_images']} pictures with ground truth")
    print(f"wrote {result.out / 'results.csv'}, {result.out / 'results.json'}"
          + (f", {result.out / 'overlays'}/" if request.overlays else ""))
    if outcome.where_line():
        print(outcome.where_line())
    return 0
