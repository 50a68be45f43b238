"""``studio compare GOLDEN TARGET``: compare two dumps op by op and run the accuracy advisor.

GOLDEN and TARGET are dump folders (``studio dump``, ``.npy`` folders, NPU dumps) or NPU dump files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from studio.core.serial import to_json

NAME = "compare"
HELP = "compare two tensor dumps op by op (cosine, errors, KL) and say where accuracy is lost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("golden", type=Path, metavar="GOLDEN", help="reference dump (e.g. the FP32 run)")
    parser.add_argument("target", type=Path, metavar="TARGET", help="dump to check (FP16, NPU, converted model)")
    parser.add_argument("-o", "--output", type=Path, metavar="result.csv", help="write msaccucmp-style CSV")
    parser.add_argument("--mapping", type=Path, metavar="FILE",
                        help='fused-op mapping: converter report ("node_mapping") or {"converted": ["original", ...]}')
    parser.add_argument("--api-mapping", type=Path, metavar="FILE",
                        help="msprobe dumps of two frameworks: API names that correspond (JSON or name: name lines; "
                             "msprobe's ms_to_pt_api.yaml works)")
    parser.add_argument("--data-mapping", type=Path, metavar="FILE",
                        help="msprobe dumps: full API names to pair by hand (golden: target)")
    parser.add_argument("--no-fuzzy", action="store_true",
                        help="msprobe dumps: pair calls by their exact names only")
    parser.add_argument("--check", action="store_true", help="exit 1 when any compared tensor fails")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    from studio.core.thresholds import add_threshold_arguments

    add_threshold_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from studio.tools.accuracy.msprobe_dump import is_msprobe_dump

    if is_msprobe_dump(args.golden) and is_msprobe_dump(args.target):
        return _run_msprobe(args)
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.matching import load_mapping
    from studio.tools.accuracy.metrics import Thresholds

    from studio.core.thresholds import thresholds_from_args

    thresholds = Thresholds.of(thresholds_from_args(args))  # refuses a cosine outside -1..1 before any reading
    mapping = load_mapping(args.mapping) if args.mapping else None
    result = run_job(compare_dumps(args.golden, args.target, mapping=mapping,
                                   thresholds=thresholds), on_progress=print_progress)
    if args.output:
        result.write_csv(args.output)
    if args.json:
        data = to_json(result)
        if args.output:
            data["csv"] = str(args.output)
        print(json.dumps(data, indent=1))
    else:
        print(result)
        if args.output:
            print(f"wrote {args.output}")
    return 1 if args.check and not result else 0


def _run_msprobe(args: argparse.Namespace) -> int:
    """Two msprobe dumps (dump.json or their folders): compared API by API with msprobe's rules."""
    from studio.tools.accuracy.msprobe_compare import compare_msprobe

    result = compare_msprobe(args.golden, args.target, args.data_mapping, args.api_mapping, not args.no_fuzzy)
    if args.output:
        _write_msprobe_csv(result, args.output)
    if args.json:
        print(json.dumps(to_json(result), indent=1))
    else:
        print(result)
        if args.output:
            print(f"wrote {args.output}")
    return 1 if args.check and not result else 0


def _write_msprobe_csv(result, path: Path) -> None:
    import csv

    from studio.tools.accuracy.msprobe_dump import STAT_KEYS

    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Target Name", "Golden Name", "Target Dtype", "Golden Dtype", "Target Shape", "Golden Shape",
                         *(f"{k} diff" for k in STAT_KEYS), "NormRelativeErr", "Result", "Message"])
        for row in result.rows:
            writer.writerow([f"{row.target_api}.{row.slot}", f"{row.golden_api}.{row.slot}", row.target_dtype,
                             row.golden_dtype, row.target_shape, row.golden_shape,
                             *(row.diffs.get(k) for k in STAT_KEYS), row.norm_relative, row.result, row.message])
