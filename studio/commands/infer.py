"""``studio infer MODEL IMAGES -o OUT --task classify|detect|segment [--host NAME]``: a model over a
folder of pictures (an .onnx here with ONNX Runtime or on a host with Studio's engine; an .om with
msame or ais_bench on a host, pre- and post-processing here; :mod:`studio.ops.infer`)."""

from __future__ import annotations

import argparse
import json

NAME = "infer"
HELP = "run a model over a folder of pictures: top-k, boxes or masks, metrics against ground truth, overlays"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.infer import Request

    add_request_arguments(parser, Request, "model", "images", "out", "task", "labels", "truth", "preset", "mean",
                          "std", "resize", "size", "bgr", "layout", "head", "conf", "iou", "top", "overlays")
    parser.add_argument("--json", action="store_true", help="print one entry per picture and the summary as JSON")
    parser.add_argument("--host", metavar="NAME", help="run on this host (see studio ssh list): an .om with msame or "
                        "ais_bench (pictures preprocessed and answers scored here), an .onnx with Studio's engine")
    add_request_arguments(parser, Request, "tool", "device")
    add_request_arguments(parser, Request)  # --provider, the host engine's options


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
