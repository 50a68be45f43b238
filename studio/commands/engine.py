"""``studio engine list|clean [--host H]``: Studio's engine folders on a host, the wheels built here."""

from __future__ import annotations

import argparse
import json

from studio.core.units import human_size
from studio.core.serial import to_json

NAME = "engine"
HELP = "Studio's engine on a host (--host) or its wheels built here: list versions and run folders, clean old ones"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="the engine versions and run folders on a host (or the wheels here)")
    clean = actions.add_parser("clean", help="remove other versions' folders and cut or old run folders")
    for sub in (listing, clean):
        sub.add_argument("--host", metavar="NAME", help="a host added with `studio ssh add` (default: this computer)")
        sub.add_argument("--json", action="store_true", help="print machine-readable JSON")
    clean.add_argument("--older-than", type=float, default=24.0, metavar="HOURS",
                       help="also remove run folders older than this, any installation's (default 24)")
    clean.add_argument("--dry-run", action="store_true", help="only say what would be removed")


def run(args: argparse.Namespace) -> int:
    from studio import __version__
    from studio.runs import engine_admin

    if args.host:
        from studio.commands._context import cli_context
        from studio.runs.where import target_for_host

        with target_for_host(cli_context(), args.host) as target:
            root, versions = engine_admin.host_engines(target, __version__)
            doomed = engine_admin.host_cleanup(versions, args.older_than * 3600) \
                if args.action == "clean" and root else []
            if doomed and not args.dry_run:
                engine_admin.remove_on_host(target, root, doomed)
        where = args.host
    else:
        cache, versions = engine_admin.local_wheels()
        root = str(cache)
        doomed = [v.path for v in versions if not v.current] if args.action == "clean" else []
        if doomed and not args.dry_run:
            engine_admin.remove_here(doomed)
        where = "this computer"
    if args.json:
        data = {"where": where, "root": root, "versions": to_json(versions)}
        if args.action == "clean":
            data.update(removed=[] if args.dry_run else doomed, would_remove=doomed if args.dry_run else [])
        print(json.dumps(data, indent=2))
        return 0
    if root is None:
        print(f"{where}: no engine folder yet")
        return 0
    kind = "engine folder" if args.host else "wheels built here"
    print(f"{where}: {kind} {root}")
    for version in versions:
        print(f"  {version.name}  {human_size(version.kb * 1024)}" + ("  (this Studio)" if version.current else ""))
        for folder in version.runs:
            print(f"    run {folder.path.rsplit('/', 1)[-1]}  {folder.age_s // 60} min old  {folder.state}")
    if args.action == "clean":
        verb = "would remove" if args.dry_run else "removed"
        print(f"{verb} {len(doomed)} folder(s)" + "".join(f"\n  {p}" for p in doomed))
    return 0
