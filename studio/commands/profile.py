"""``studio profile run|stats|compare|cluster|memory``: local profiling and profile statistics, headless."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from studio.core.serial import dumps, to_json

NAME = "profile"
HELP = "profile an ONNX model locally; statistics and baseline comparison of traces and msprof output"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="run MODEL with ONNX Runtime and write a profile folder")
    from studio.core.options import add_arguments as add_request_arguments
    from studio.ops.profile import Request

    add_request_arguments(run, Request, "model", "output", "iterations", "warmup", "inputs", "shapes", "seed")
    run.add_argument("--json", action="store_true", help="print machine-readable JSON")
    from studio.commands._onhost import add_profile_host_arguments

    add_profile_host_arguments(run)
    add_request_arguments(run, Request)  # --provider, the host engine's options

    stats = actions.add_parser("stats", help="per-name statistics of a trace, ORT profile or profiling folder")
    stats.add_argument("path", type=Path, metavar="PATH")
    stats.add_argument("--top", type=int, default=None, metavar="N", help="only the N names with most total time")
    stats.add_argument("--json", action="store_true", help="print machine-readable JSON")
    stats.add_argument("--include-warmup", action="store_true",
                       help="also count the warm-up iterations (left out by default when the profile marks them)")
    stats.add_argument("--no-cache", action="store_true", help="parse again even when a cached copy exists")
    stats.add_argument("--store-cache", action="store_true",
                       help="also write the parsed trace to the cache, so the next open of this file is instant "
                            "(the window does so itself when it opens the file)")

    compare = actions.add_parser("compare", help="per-op and per-API deltas of NEW against baseline BASE; two "
                                                 "folders of ranks are compared rank by rank")
    compare.add_argument("base", type=Path, metavar="BASE", help="a profile, or a folder of ranks")
    compare.add_argument("new", type=Path, metavar="NEW", help="a profile, or a folder of ranks (when BASE is one)")
    compare.add_argument("--json", action="store_true", help="print machine-readable JSON")
    compare.add_argument("--no-rerun", action="store_true",
                         help="judge the latency on the profiles' own samples only, even when both models can be "
                              "timed again here (interleaved A/B, the default for two local runs made here)")
    compare.add_argument("--budget", type=float, default=10.0, metavar="S",
                         help="seconds the interleaved A/B may take at most (default 10; it stops earlier once the "
                              "confidence interval is within ±2 %%)")
    _add_cluster_arguments(actions)
    _add_memory_arguments(actions)


def run(args: argparse.Namespace) -> int:
    return {"run": _run, "stats": _stats, "compare": _compare, "cluster": _cluster,
            "memory": _memory}[args.action](args)


def _run(args: argparse.Namespace) -> int:
    from studio.commands._engine_host import print_result, run_op
    from studio.ops import profile

    if args.host and not args.config and len(args.model) == 1 and args.model[0].lower().endswith(".onnx"):
        print_result(run_op(profile, profile.Request.from_args(args), args.host, args.json), args.json)
        return 0
    if args.host or args.config:
        from studio.commands._onhost import profile_on_host_cli

        return profile_on_host_cli(args, args.model)
    if len(args.model) != 1:
        from studio.core.errors import UserError

        raise UserError("`studio profile run` takes one model", " ".join(args.model) or "MODEL",
                        "Run: studio profile run MODEL -o DIR (or --host NAME ... -- CMD for msprof on a host)")
    print_result(run_op(profile, profile.Request.from_args(args), None, args.json), args.json)
    return 0


def _stats(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.profiler import stats
    from studio.tools.profiler.loader import open_profile

    _must_exist(args.path)
    # Statistics need no levels of detail. A cached copy is read when current, but a fresh parse is
    # not written unless asked: writing the columns and args (~300 MB for 1M events) took a fifth
    # of the command's time, for a benefit only to a second run on the same unchanged file.
    trace = run_job(open_profile(args.path, use_cache=not args.no_cache, store=args.store_cache, lod=False),
                    on_progress=print_progress)
    data = stats.summary(trace, args.top, args.include_warmup)
    _print_warnings(trace)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"{args.path}: {data['events']:,} slices over {data['span_us']:,.1f} us, "
          f"{data['tracks']} tracks, {data['counters']} counters")
    for key, value in trace.facts.items():
        print(f"  {key}: {value}")
    print(f"op statistics {data['measured']['note']}")
    rows = data["by_name"]
    if not rows:
        print("no slices" + (f"; tables: {', '.join(trace.tables)}" if trace.tables else ""))
        return 0
    width = min(60, max(len(r["name"]) for r in rows))
    print(f"{'name':<{width}} {'count':>7} {'total us':>12} {'avg us':>10} {'min us':>10} {'max us':>10} "
          f"{'self us':>12} {'share':>7}")
    for r in rows:
        name = r["name"] if len(r["name"]) <= width else r["name"][:width - 1] + "…"
        print(f"{name:<{width}} {r['count']:>7} {r['total_us']:>12.3f} {r['avg_us']:>10.3f} "
              f"{r['min_us']:>10.3f} {r['max_us']:>10.3f} {r['self_us']:>12.3f} {r['share'] * 100:>6.2f}%")
    print("share = share of op self time; the run's own ranges are not ops and not counted")
    if data["wrappers"]:
        print("run ranges (not in the op statistics): " + ", ".join(
            f"{w['name']} ×{w['count']} {w['total_us']:,.1f} us" for w in data["wrappers"][:8])
            + (" …" if len(data["wrappers"]) > 8 else ""))
    return 0


def _must_exist(*paths: Path) -> None:
    from studio.core.errors import UserError

    for path in paths:
        if not path.exists():
            raise UserError("File not found", path, "Check the path: give a trace JSON, an ORT profile, a profile "
                            "folder, an msprof CSV or database.")


def _print_warnings(*traces) -> None:
    import sys

    for trace in traces:
        for warning in trace.warnings:
            print(f"warning: {warning}", file=sys.stderr)


def _compare(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.profiler.compare import compare
    from studio.tools.profiler.loader import open_profile

    _must_exist(args.base, args.new)
    if _compare_clusters(args):
        return 0
    base = run_job(open_profile(args.base), on_progress=print_progress)
    new = run_job(open_profile(args.new), on_progress=print_progress)
    _print_warnings(base, new)
    result = compare(base, new)
    if not args.no_rerun:
        from studio.tools.profiler.compare import rerun_plan

        plan = rerun_plan(base, new)
        change = None
        if not isinstance(plan, str):
            from studio.tools.bench.ab_run import ab_models

            change = run_job(ab_models(*plan, budget_s=args.budget), on_progress=None if args.json else print_progress)
        result.judge_rerun(plan, change)
    print(json.dumps(to_json(result), indent=2) if args.json else str(result))
    return 0


def _compare_clusters(args: argparse.Namespace) -> bool:
    """Two folders of ranks: compared rank by rank (True when done); one: refused, saying how."""
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.profiler.cluster_compare import compare_clusters, is_cluster, refuse_mixed
    from studio.tools.profiler.loader import open_profile

    clusters = is_cluster(args.base), is_cluster(args.new)
    if not any(clusters):
        return False
    if not all(clusters):
        refuse_mixed(args.base, args.new)
    result = run_job(compare_clusters(args.base, args.new, open_profile),
                     on_progress=None if args.json else print_progress)
    print(json.dumps(to_json(result), indent=2) if args.json else str(result))
    return True


def _add_cluster_arguments(actions) -> None:
    cluster = actions.add_parser("cluster", help="per-rank step time, communication matrix, parallel groups, "
                                                 "slow ranks and links of a multi-rank profile")
    cluster.add_argument("path", type=Path, metavar="DIR", nargs="?",
                         help="folder of *_ascend_pt or PROF_* rank folders, or a cluster_analysis_output")
    cluster.add_argument("--json", action="store_true", help="print machine-readable JSON")
    cluster.add_argument("--on", action="append", default=[], metavar="HOST:DIR",
                         help="a folder of ranks on a host (repeat per host): each host's engine reads its ranks in "
                              "place, all at once, and only what the report is made of comes back")
    cluster.add_argument("--parts", action="store_true",
                         help="print what the report is made of, per rank, as JSON (what a host sends back for --on; "
                              "with --comm or --free, what those reports are made of)")
    cluster.add_argument("--ask", default=None, metavar="QUESTIONS",
                         help="with --parts --comm: answer these questions (JSON) about the ranks' kernels and tasks "
                              "(what a host is asked for the causes of slow collectives)")
    cluster.add_argument("--comm", action="store_true",
                         help="why a rank is slow in its collectives: each op's time split per rank (elapse, transit, "
                              "wait, synchronisation, idle), who waited for whom, and the slow rank of each long op "
                              "(host- or device-bound, from the ranks' ascend_pytorch_profiler_<rank>.db)")
    cluster.add_argument("--free", action="store_true",
                         help="why each rank's device sat idle: every free gap between busy stretches labelled (python "
                              "idle, CANN launch gap or long launch, memcpy or another device task running), with "
                              "totals per cause and rank (from ascend_pytorch_profiler_<rank>.db or trace_view.json)")
    cluster.add_argument("--rank", type=int, default=None, metavar="N",
                         help="with --comm: the rank whose longest communication ops are explained (default: the "
                              "lowest rank with a profiler db)")
    cluster.add_argument("--top", type=int, default=10, metavar="K",
                         help="with --comm: how many of its longest communication ops; with --free: how many of "
                              "each rank's longest gaps the text lists (--json has every gap) (default 10)")


def _cluster(args: argparse.Namespace) -> int:
    from studio.core.errors import UserError
    from studio.tools.profiler.cluster import open_cluster

    if args.comm and args.free:
        raise UserError("--comm and --free are two reports", "--comm / --free", "Give one of them per run.")
    if args.on:
        from studio.commands._engine_host import print_result
        from studio.commands._context import cli_context
        from studio.core.jobs import run_job
        from studio.ops import cluster

        if args.path is not None:
            raise UserError("Give DIR or --on HOST:DIR, not both", "DIR / --on", "Drop DIR, or drop --on.")
        mode = "comm" if args.comm else "free" if args.free else "parts"
        print_result(run_job(cluster.run(cluster.parse_on(args.on), cli_context(), mode=mode, target=args.rank,
                                         top=args.top)), args.json)
        return 0
    if args.path is None:
        raise UserError("Which folder of ranks?", "DIR", "Give DIR, or --on HOST:DIR for folders left on hosts.")
    if str(args.path) == "~" or str(args.path).startswith("~/"):
        # `--on HOST:~/dir` arrives quoted (no shell expands it): the home is the one of this user here
        args.path = args.path.expanduser()
    if args.parts:
        _must_exist(args.path)
        print(json.dumps(_parts(args)))
        return 0
    if args.free:
        from studio.tools.profiler.cluster.free_gaps import open_free

        return _print_report(args, lambda path: open_free(path, args.top))
    if args.comm:
        from studio.tools.profiler.cluster.comm_report import open_comm

        return _print_report(args, lambda path: open_comm(path, args.rank, args.top))
    return _print_report(args, open_cluster)


def _parts(args: argparse.Namespace):
    """What a host sends back for ``--on``: the parts of the report asked for, or its answers."""
    from studio.core.errors import UserError
    from studio.tools.profiler.cluster.discover import find_ranks

    found = find_ranks(args.path)
    if not found.ranks:
        raise UserError("--parts reads the ranks' own folders; this is msprof-analyze's output", args.path,
                        "Give the folder that holds the *_ascend_pt (or PROF_*) folders.")
    if args.free:
        from studio.tools.profiler.cluster.free_gaps import open_free

        return to_json(open_free(args.path, args.top))
    if args.comm and args.ask is not None:
        from studio.tools.profiler.cluster.host_causes import answer

        try:
            questions = json.loads(args.ask)
        except ValueError as exc:
            raise UserError(f"--ask is not JSON: {exc}", "--ask", "Give the questions as a JSON list.") from exc
        return answer(found, questions)
    if args.comm:
        from studio.tools.profiler.cluster.comm_report import comm_parts

        return comm_parts(found)
    from studio.tools.profiler.cluster.engine import rank_parts

    return rank_parts(found)


def _print_report(args: argparse.Namespace, opener) -> int:
    _must_exist(args.path)
    report = opener(args.path)
    # serial.dumps writes what json.dumps(to_json(report), indent=2) would, in a third of the time
    # (every idle gap of 16 ranks is 67 MB of JSON)
    print(dumps(report) if args.json else str(report))
    return 0


def _add_memory_arguments(actions) -> None:
    memory = actions.add_parser("memory", help="per-device memory peak and the operator blocks alive at it")
    memory.add_argument("path", type=Path, metavar="DIR",
                        help="a rank's *_ascend_pt folder, its ASCEND_PROFILER_OUTPUT, a folder of ranks, "
                             "or a static_op_mem.csv")
    memory.add_argument("--json", action="store_true", help="print machine-readable JSON")
    memory.add_argument("--from", dest="from_ms", type=float, default=None, metavar="MS",
                        help="the operator blocks allocated or freed from MS milliseconds after each device's first "
                             "allocator sample (the Memory tab's time axis; default: the start)")
    memory.add_argument("--to", dest="to_ms", type=float, default=None, metavar="MS",
                        help="... up to MS milliseconds (default: the end)")
    memory.add_argument("--group", choices=("op", "stream", "component"), default=None,
                        help="add the interval's blocks up per op, stream or component (PTA or GE)")
    memory.add_argument("--min-kb", type=float, default=0.0, metavar="N",
                        help="only blocks of N KB or more in the interval (default 0: all)")
    memory.add_argument("--compare", type=Path, default=None, metavar="NEW",
                        help="compare NEW (another run's folder) with DIR op by op: blocks, MB and allocated time "
                             "per operator, as msprof-analyze's memory compare")


def _memory(args: argparse.Namespace) -> int:
    from studio.core.errors import UserError
    from studio.tools.profiler.memory import Interval, open_memory

    queried = args.from_ms is not None or args.to_ms is not None or args.group or args.min_kb
    if args.compare is not None:
        if queried:
            raise UserError("--compare takes no interval", "--from / --to / --group / --min-kb",
                            "Compare the whole runs, or query one run's interval without --compare.")
        from studio.tools.profiler.memory.compare import compare_reports

        _must_exist(args.path, args.compare)
        base, new = (to_json(open_memory(p, blocks=True)) for p in (args.path, args.compare))
        result = compare_reports(base, new, str(args.path), str(args.compare))
        print(json.dumps(to_json(result), indent=2) if args.json else str(result))
        return 0
    if args.min_kb < 0:
        raise UserError(f"--min-kb {args.min_kb:g} is negative", "--min-kb", "Give 0 or more kilobytes.")
    if args.from_ms is not None and args.to_ms is not None and args.from_ms > args.to_ms:
        raise UserError(f"--from {args.from_ms:g} ms is after --to {args.to_ms:g} ms", "--from / --to",
                        "Give the interval's start first: --from 10 --to 20.")
    interval = Interval(args.from_ms, args.to_ms, args.min_kb, args.group) if queried else None
    return _print_report(args, lambda path: open_memory(path, interval=interval))
