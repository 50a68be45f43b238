"""``studio compare GOLDEN TARGET``: compare two dumps op by op and run the accuracy advisor.

GOLDEN and TARGET are dump folders (``studio dump``, ``.npy`` folders, NPU dumps) or NPU dump files.
"""

from __future__ import annotations

import argparse
import json
import sys
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
    parser.add_argument("--layer-mapping", type=Path, metavar="FILE",
                        help="msprobe dumps of two frameworks: msprobe's -lm YAML (module type: target submodule "
                             "name: golden name) pairing calls by their place in the module tree")
    parser.add_argument("--data-mapping", type=Path, metavar="FILE",
                        help="msprobe dumps: full API names to pair by hand (golden: target)")
    parser.add_argument("--no-fuzzy", action="store_true",
                        help="msprobe dumps: pair calls by their exact names only")
    parser.add_argument("--graph", type=Path, metavar="OUT.svg",
                        help="msprobe dumps: draw both module trees (construct.json) side by side, coloured by the "
                             "worst verdict under each module, overflowing ones marked")
    parser.add_argument("--ranks", action="store_true",
                        help="msprobe dumps of a distributed job (folders holding rankN or procNNNN): each rank "
                             "compared, and the rank and API that diverged first named")
    parser.add_argument("--divergence-rule", choices=("studio", "msprobe"), default="studio",
                        help="with --ranks: what counts as diverged (studio: an argument beyond the inputs' bound "
                             "or an error; msprobe: msprobe -da's outputs' statistics over 50%%)")
    parser.add_argument("--check", action="store_true", help="exit 1 when any compared tensor fails")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    from studio.core.thresholds import add_threshold_arguments

    add_threshold_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from studio.tools.accuracy.msprobe_dump import is_msprobe_dump

    if args.ranks:
        return _run_msprobe_ranks(args)
    _pick_single_ranks(args)
    if is_msprobe_dump(args.golden) and is_msprobe_dump(args.target):
        return _run_msprobe(args)
    if args.graph:
        from studio.core.errors import UserError

        raise UserError("--graph draws the module trees of two msprobe dumps; these are not msprobe dumps",
                        str(args.target), "Give two msprobe dump.json files (or their folders), or drop --graph.")
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


def _pick_single_ranks(args: argparse.Namespace) -> None:
    """msprobe's ``stepN`` folders (one ``rankN``/``procNNNN`` inside) stand for that rank's dump.json;
    the file read is named on stderr, so a script's output stays the comparison alone."""
    from studio.tools.accuracy.msprobe_ranks import one_rank_dump

    for side in ("golden", "target"):
        dump = one_rank_dump(getattr(args, side))
        if dump is not None:
            print(f"{side}: reading {dump} (the folder's one rank)", file=sys.stderr)
            setattr(args, side, dump)


def _run_msprobe(args: argparse.Namespace) -> int:
    """Two msprobe dumps (dump.json or their folders): compared API by API with msprobe's rules; with
    ``-o``, msprobe's own result layout is written beside Studio's CSV (``NAME.msprobe.csv``)."""
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.accuracy.msprobe_compare import iter_compare_msprobe
    from studio.tools.accuracy.msprobe_csv import msprobe_csv_path, write_msprobe_csv, write_studio_csv

    result = run_job(iter_compare_msprobe(args.golden, args.target, args.data_mapping, args.api_mapping,
                                          not args.no_fuzzy, layer_mapping=args.layer_mapping),
                     on_progress=print_progress)
    written = []
    if args.output:
        write_studio_csv(result, args.output)
        write_msprobe_csv(result, msprobe_csv_path(args.output))
        written = [args.output, msprobe_csv_path(args.output)]
    if args.graph:
        from studio.ops.msprobe_graph import module_graph_svg

        written.append(module_graph_svg(result, args.graph))
    if args.json:
        data = to_json(result)
        if args.output:
            data["csv"], data["msprobe_csv"] = (str(p) for p in written[:2])
        if args.graph:
            data["graph"] = str(args.graph)
        print(json.dumps(data, indent=1))
    else:
        print(result)
        for path in written:
            print(f"wrote {path}")
    return 1 if args.check and not result else 0


def _run_msprobe_ranks(args: argparse.Namespace) -> int:
    """Every rank of two msprobe dumps compared; the first divergence across ranks named."""
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.accuracy.msprobe_ranks import first_divergence_across_ranks

    result = run_job(first_divergence_across_ranks(args.golden, args.target, args.divergence_rule),
                     on_progress=print_progress)
    print(json.dumps(to_json(result), indent=1) if args.json else result)
    return 1 if args.check and result.first is not None else 0
