"""``studio compare GOLDEN TARGET``: compare two dumps op by op and run the accuracy advisor.

GOLDEN and TARGET are dump folders (``studio dump``, ``.npy`` folders, NPU dumps) or NPU dump files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "compare"
HELP = "compare two tensor dumps op by op (cosine, errors, KL) and say where accuracy is lost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("golden", type=Path, metavar="GOLDEN", help="reference dump (e.g. the FP32 run)")
    parser.add_argument("target", type=Path, metavar="TARGET", help="dump to check (FP16, NPU, converted model)")
    parser.add_argument("-o", "--output", type=Path, metavar="result.csv", help="write msaccucmp-style CSV")
    parser.add_argument("--mapping", type=Path, metavar="FILE",
                        help='fused-op mapping: converter report ("node_mapping") or {"converted": ["original", ...]}')
    parser.add_argument("--cosine", type=float, default=0.99, help="cosine threshold (default 0.99)")
    parser.add_argument("--check", action="store_true", help="exit 1 when any compared tensor fails")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.jobs import run_job
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.matching import load_mapping
    from studio.tools.accuracy.metrics import Thresholds

    thresholds = Thresholds(cosine=args.cosine)  # refuses a cosine outside -1..1 before any reading
    mapping = load_mapping(args.mapping) if args.mapping else None
    result = run_job(compare_dumps(args.golden, args.target, mapping=mapping,
                                   thresholds=thresholds), on_progress=print_progress)
    if args.output:
        result.write_csv(args.output)
    if args.json:
        data = result.to_json()
        if args.output:
            data["csv"] = str(args.output)
        print(json.dumps(data, indent=1))
    else:
        print(result)
        if args.output:
            print(f"wrote {args.output}")
    return 1 if args.check and not result else 0
