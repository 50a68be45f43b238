"""``studio deploy ...``: deployments (local folder <-> remote folder) and their dry-run-first sync.

Examples::

    studio deploy add proj --host npu1 --local ./proj --remote /home/me/proj --exclude '*.om' --exclude build/
    studio deploy status proj
    studio deploy upload proj --dry-run
    studio deploy sync proj --delete --prefer local
    studio deploy compare proj src/main.py --diff
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from studio.core.units import human_size
from studio.core.serial import to_json

NAME = "deploy"
HELP = "sync a local folder with a folder on an SSH host: upload, download, sync, compare"

ACTION_WORDS = {"upload": "upload", "download": "download", "delete-remote": "DELETE remote",
                "delete-local": "DELETE local", "conflict": "CONFLICT", "skip": "skip", "refuse": "REFUSED"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = sub.add_parser("add", help="add or replace a deployment")
    add.add_argument("name")
    add.add_argument("--host", required=True, help="a host added with `studio ssh add`")
    add.add_argument("--local", required=True, type=Path, metavar="DIR", help="the local folder")
    add.add_argument("--remote", required=True, metavar="DIR", help="the remote folder (absolute, or relative to the login folder)")
    add.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                     help="gitignore-style pattern to leave out (repeatable)")
    sub.add_parser("list", help="list deployments").add_argument("--json", action="store_true")
    remove = sub.add_parser("remove", help="forget a deployment (no files are touched)")
    remove.add_argument("name")
    status = sub.add_parser("status", help="what differs, as a two-way sync would see it (changes nothing)")
    status.add_argument("name")
    status.add_argument("--json", action="store_true", help="print machine-readable JSON")
    _connection_options(status)
    for action, text in (("upload", "make the remote folder like the local one"),
                         ("download", "make the local folder like the remote one"),
                         ("sync", "two-way: copy each side's changes to the other")):
        p = sub.add_parser(action, help=text)
        p.add_argument("name")
        p.add_argument("--dry-run", "-n", action="store_true", help="show the plan, change nothing")
        p.add_argument("--delete", action="store_true", help="also propagate deletions (listed before they happen)")
        p.add_argument("--checksum", "-c", action="store_true", help="compare SHA-256 of equal-sized files, not mtimes")
        p.add_argument("--prefer", choices=("local", "remote"), help="settle conflicts in favour of this side")
        p.add_argument("--yes", "-y", action="store_true", help="delete without asking (the plan is still printed first)")
        p.add_argument("--json", action="store_true", help="print machine-readable JSON")
        _connection_options(p)
    compare = sub.add_parser("compare", help="list what differs; --diff shows text differences")
    compare.add_argument("name")
    compare.add_argument("path", nargs="?", help="only this file or folder (relative to the deployment)")
    compare.add_argument("--diff", action="store_true", help="unified diff of differing text files")
    compare.add_argument("--checksum", "-c", action="store_true", help="compare contents by SHA-256")
    compare.add_argument("--json", action="store_true", help="print machine-readable JSON")
    _connection_options(compare)


def _connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verbose", "-v", action="store_true", help="list every file of the plan")
    # Tests and scripts point at an extra known_hosts file (STUDIO_KNOWN_HOSTS works too).
    parser.add_argument("--known-hosts", type=Path, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from studio.tools.deploy.deployments import DeploymentStore

    store = DeploymentStore()
    if args.action == "add":
        return _add(store, args)
    if args.action == "list":
        return _list(store, args)
    if args.action == "remove":
        store.remove(args.name)
        store.save()
        print(f"removed deployment {args.name} (files untouched)")
        return 0
    deployment = store.get(args.name)
    connector = _connector(deployment, args)
    if args.action == "status":
        return _status(deployment, connector, args)
    if args.action == "compare":
        return _compare(deployment, connector, args)
    return _transfer(deployment, connector, args)


def _connector(deployment, args):
    from studio.commands._context import cli_context
    from studio.tools.deploy.sync import host_connector

    return host_connector(cli_context(getattr(args, "known_hosts", None)), deployment)


def _add(store, args) -> int:
    from studio.tools.deploy.deployments import Deployment
    from studio.commands._context import cli_context
    from studio.targets.transfer.ignore import Excludes

    cli_context().entry(args.host)  # a typo in the host name is caught now, not at the first sync
    local = args.local.expanduser().resolve()
    Excludes(args.exclude)  # compiles every pattern now
    deployment = Deployment(args.name, args.host, str(local), args.remote, list(args.exclude))
    store.put(deployment)
    store.save()
    note = "" if local.is_dir() else " (the local folder does not exist yet; a download creates it)"
    print(f"deployment {args.name}: {local} <-> {args.host}:{args.remote}{note}")
    return 0


def _list(store, args) -> int:
    rows = to_json(list(store.deployments.values()))
    if args.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print("no deployments yet; add one with `studio deploy add NAME --host HOST --local DIR --remote DIR`")
    for row in [] if args.json else rows:
        excludes = f"  (excluding {', '.join(row['excludes'])})" if row["excludes"] else ""
        print(f"{row['name']}: {row['local']} <-> {row['host']}:{row['remote']}{excludes}")
    return 0


def shown(path: str) -> str:
    """A path as one printable line: control characters escaped, the rest as is."""
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)


LISTED = 20  # uploads, downloads and skips shown per kind; deletions, conflicts and refusals always all


def print_plan(plan, out=None, verbose: bool = False) -> None:
    """The plan, one line per file; long runs of uploads/downloads/skips are cut unless ``verbose``."""
    out = out or sys.stdout
    for note in plan.notes:
        print(f"note: {note}", file=out)
    shown_per_kind: dict[str, int] = {}
    hidden: dict[str, int] = {}
    for item in plan.items:
        action = item.effective_action(plan.delete)
        if not verbose and action in ("upload", "download", "skip"):
            shown_per_kind[action] = shown_per_kind.get(action, 0) + 1
            if shown_per_kind[action] > LISTED:
                hidden[action] = hidden.get(action, 0) + 1
                continue
        word = ACTION_WORDS[action]
        if item.action == "conflict" and item.choice:
            word = f"{word} (keep {item.choice})"
        print(f"  {word:<15} {human_size(item.size):>10}  {shown(item.path)}  [{item.reason}]", file=out)
    for action, count in hidden.items():
        print(f"  ... and {count} more to {action} (--verbose lists all)", file=out)
    print(plan.summary(), file=out)


def _status(deployment, connector, args) -> int:
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.deploy.sync import status_job

    status = run_job(status_job(deployment, connector), on_progress=print_progress)
    if args.json:
        print(json.dumps({"deployment": deployment.name, **to_json(status)}, indent=2))
        return 0
    plan = status.plan
    print(f"{deployment.name}: {deployment.local} <-> {deployment.host}:{deployment.remote}")
    print(f"  {len(plan.local.files)} local files, {len(plan.remote.files)} remote files"
          + ("" if plan.remote.exists else " (remote folder does not exist yet)"))
    print_plan(plan, verbose=args.verbose)
    print(f"checked in {status.seconds:.2f} s")
    return 0


def _transfer(deployment, connector, args) -> int:
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.tools.deploy.sync import plan_job, run_job as sync_job

    out = sys.stderr if args.json else sys.stdout
    if args.dry_run:
        plan = run_job(plan_job(deployment, args.action, connector, args.delete, args.checksum),
                       on_progress=print_progress)
        plan.resolve(args.prefer)
        if args.json:
            print(json.dumps({"dry_run": True, "summary": plan.counts(), "items": to_json(plan.items)},
                             indent=2))
        else:
            print_plan(plan, verbose=args.verbose)
            print("dry run: nothing was changed")
        return 0

    def show(plan) -> None:  # deletions and conflicts are on screen before anything moves
        print_plan(plan, out, args.verbose)
        confirm_deletions(plan, deployment, args.yes)

    plan, result = run_job(sync_job(deployment, args.action, connector, args.delete, args.checksum, args.prefer,
                                    on_plan=show), on_progress=print_progress)
    if args.json:
        print(json.dumps({"dry_run": False, "summary": plan.counts(), "items": to_json(plan.items),
                          "result": to_json(result)}, indent=2))
    else:
        print(result.summary())
    for path, error in result.failed:
        print(f"failed: {shown(path)}: {error}", file=sys.stderr)
    for path, reason in result.refused:
        print(f"refused: {shown(path)}: {reason}", file=sys.stderr)
    if result.conflicts:
        print(f"{len(result.conflicts)} conflicts were left untouched; look at them with "
              f"`studio deploy compare {deployment.name} PATH --diff`, then rerun with --prefer local or "
              "--prefer remote", file=sys.stderr)
    return 0 if result.ok else 1


def confirm_deletions(plan, deployment, yes: bool) -> None:
    """Before an apply that deletes: say how many files go, and ask (``--yes`` skips the question).

    Without a terminal to ask on, refuse: a script must say --yes to delete.
    """
    from studio.core.errors import UserError

    counts = plan.counts()
    remote, local = counts.get("delete-remote", 0), counts.get("delete-local", 0)
    if not (remote or local) or yes:
        return
    where = " and ".join(part for part in (f"{remote} on {deployment.host}" if remote else "",
                                           f"{local} on this computer" if local else "") if part)
    what = f"{remote + local} files would be deleted ({where}), listed above"
    if not sys.stdin.isatty():
        raise UserError(f"{what}; nothing was changed", deployment.name,
                        "Check the list, then run again with --yes to delete them (or without --delete).")
    answer = input(f"{what}. Delete them [y/N]? ").strip().lower()
    if answer not in ("y", "yes"):
        raise UserError("Not deleting: nothing was changed", deployment.name,
                        "Run again without --delete, or answer y.")


def _compare(deployment, connector, args) -> int:
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.targets.transfer.safe_paths import user_relative
    from studio.tools.deploy.sync import plan_job, text_diff

    prefix = user_relative(args.path, deployment.local_root) if args.path else ""
    plan = run_job(plan_job(deployment, "sync", connector, delete=True, checksum=args.checksum),
                   on_progress=print_progress)
    rows = []
    for item in plan.items:
        if prefix and not (item.path == prefix or item.path.startswith(prefix + "/")):
            continue
        where = "both" if item.local and item.remote else "local only" if item.local else \
            "remote only" if item.remote else "-"
        rows.append({"path": item.path, "where": where, "reason": item.reason, "action": item.action})
    diffs = {}
    if args.diff:
        for row in rows[:50]:
            if row["action"] != "refuse":
                diffs[row["path"]] = run_job(text_diff(deployment, row["path"], connector))
    if args.json:
        print(json.dumps({"differences": rows, "unchanged": plan.unchanged, "diffs": diffs}, indent=2))
        return 0
    for row in rows:
        print(f"  {row['where']:<12} {shown(row['path'])}  [{row['reason']}]")
        if row["path"] in diffs:
            sys.stdout.write(diffs[row["path"]])
    print(f"{len(rows)} differ, {plan.unchanged} identical" + (f" (under {prefix})" if prefix else ""))
    return 0
