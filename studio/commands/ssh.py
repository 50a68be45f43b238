"""``studio ssh add|list|remove|test|trust|run``: SSH hosts, their keys, checks and remote commands."""

from __future__ import annotations

import argparse
import json
import sys

from studio.core.serial import named_table, to_json

NAME = "ssh"
HELP = "SSH hosts: add, list, remove, test the connection, trust a host key, run a remote command"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = sub.add_parser("add", help="add or replace a host (nothing secret is stored)")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--host", help="host name or IP address")
    add.add_argument("--port", type=int, help="SSH port (default 22)")
    add.add_argument("--user", help="user name on the host (default: your local user name)")
    auth = add.add_mutually_exclusive_group()
    auth.add_argument("--key", metavar="FILE", help="authenticate with this private key file")
    auth.add_argument("--agent", action="store_true", help="authenticate with the keys in ssh-agent")
    auth.add_argument("--password", action="store_true",
                      help="authenticate with a password (asked when needed; kept only in the OS keyring)")
    add.add_argument("--toolkit", metavar="DIR", help="CANN toolkit folder on the host (holds set_env.sh)")
    add.add_argument("--proxy-jump", metavar="NAME", help="connect through this host (a Studio host name or user@host:port)")
    add.add_argument("--from-ssh-config", metavar="ALIAS", help="take host, port, user, key and ProxyJump from ~/.ssh/config")
    add.add_argument("--ssh-config", metavar="FILE", help="read this file instead of ~/.ssh/config")
    listing = sub.add_parser("list", help="list the hosts")
    listing.add_argument("--json", action="store_true", help="print machine-readable JSON")
    remove = sub.add_parser("remove", help="forget a host")
    remove.add_argument("name", metavar="NAME")
    test = sub.add_parser("test", help="test the connection: a checklist of what works and what the host can run")
    test.add_argument("name", metavar="NAME")
    test.add_argument("--folder", metavar="DIR", help="remote folder whose free space to report (default: home)")
    test.add_argument("--json", action="store_true", help="print machine-readable JSON")
    trust = sub.add_parser("trust", help="show the host's key fingerprint and trust it")
    trust.add_argument("name", metavar="NAME")
    trust.add_argument("--yes", action="store_true", help="trust without asking (for scripts)")
    run_cmd = sub.add_parser("run", help="run a command on the host, streaming its output; exits with its status",
                             usage="studio ssh run NAME [--cwd DIR] [--cann] -- COMMAND [ARG ...]")
    run_cmd.add_argument("name", metavar="NAME")
    run_cmd.add_argument("--cwd", metavar="DIR", help="remote working folder")
    run_cmd.add_argument("--cann", action="store_true", help="source the host's CANN set_env.sh first")
    run_cmd.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command and its arguments, after --")


def run(args: argparse.Namespace) -> int:
    return {"add": _add, "list": _list, "remove": _remove, "test": _test, "trust": _trust, "run": _run}[args.action](args)


def _store():
    from studio.commands._context import cli_context

    return cli_context().store


def _add(args) -> int:
    from studio.core.errors import UserError
    from studio.remote.hosts import HostEntry

    store = _store()
    if args.from_ssh_config:
        from studio.remote.ssh_config import SshConfig

        config = SshConfig.load(args.ssh_config)
        entry = config.entry(args.from_ssh_config, args.name)
        for note in config.notes(args.from_ssh_config):
            print(f"note: {note}", file=sys.stderr)
    elif not args.host:
        raise UserError("No host address given", f"studio ssh add {args.name}",
                        "Give --host HOSTNAME, or --from-ssh-config ALIAS to copy it from ~/.ssh/config.")
    else:
        entry = HostEntry(name=args.name, host=args.host)
    fields = {"host": args.host, "port": args.port, "user": args.user, "toolkit": args.toolkit,
              "proxy_jump": args.proxy_jump}
    table = named_table(entry) | {k: v for k, v in fields.items() if v is not None}
    if args.key:
        table.update(auth="key", key_file=args.key)
    elif args.agent:
        table.update(auth="agent")
        table.pop("key_file", None)
    elif args.password:
        table.update(auth="password")
        table.pop("key_file", None)
    entry = HostEntry.from_table(args.name, table)
    replaced = args.name in store.hosts
    store.put(entry)
    store.save()
    print(f"{'replaced' if replaced else 'added'} {entry.name}: {entry.address} ({_auth_text(entry)})")
    _warn_missing_key(entry)
    print(f"next: `studio ssh test {entry.name}`")
    return 0


def _warn_missing_key(entry) -> None:
    """Saved all the same (the key may be copied in later), but say now why a test would fail."""
    import sys
    from pathlib import Path

    if entry.auth != "key" or not entry.key_file:
        return
    key = Path(entry.key_file).expanduser()
    if not key.is_file():
        print(f"warning: the key file {key} does not exist: connecting to {entry.name} will fail until it does.\n"
              f"  fix: pass the private key's path with --key, or make one with `ssh-keygen -t ed25519 -f {key}` "
              "and add its .pub to the host's ~/.ssh/authorized_keys", file=sys.stderr)


def _auth_text(entry) -> str:
    if entry.auth == "key":
        return f"key {entry.key_file}" if entry.key_file else "default keys in ~/.ssh"
    return entry.auth


def _list(args) -> int:
    store = _store()
    if args.json:
        print(json.dumps(to_json(list(store.hosts.values())), indent=2))
        return 0
    if not store.hosts:
        print("no hosts yet: add one with `studio ssh add NAME --host HOSTNAME`")
        return 0
    for entry in store.hosts.values():
        extra = f", via {entry.proxy_jump}" if entry.proxy_jump else ""
        extra += f", toolkit {entry.toolkit}" if entry.toolkit else ""
        print(f"{entry.name:<16} {entry.address:<32} {_auth_text(entry)}{extra}")
    return 0


def _remove(args) -> int:
    store = _store()
    store.remove(args.name)
    store.save()
    print(f"removed {args.name}")
    return 0


def _test(args) -> int:
    from studio.commands._progress import print_progress
    from studio.core.jobs import run_job
    from studio.commands._context import cli_context
    from studio.targets.probe import probe
    from studio.targets.ssh import SshTarget

    entry = _store().get(args.name)
    result = run_job(probe(SshTarget(entry, cli_context()), args.folder), on_progress=print_progress)
    if args.json:
        print(json.dumps(to_json(result), indent=2))
    else:
        marks = {"ok": "ok     ", "missing": "missing", "failed": "FAILED ", "skipped": "-      "}
        print(f"{entry.name} ({entry.address})")
        for item in result.items:
            print(f"  [{marks[item.status]}] {item.label:<22} {item.detail}")
            if item.fix and item.status != "ok":
                print(f"  {'':<9} {'':<22} fix: {item.fix}")
    if result.unknown_key is not None:
        print(f"refused: the host key is not known yet ({result.unknown_key.key_type} "
              f"{result.unknown_key.fingerprint}).\nCheck it with the server's administrator, then run "
              f"`studio ssh trust {entry.name}`.", file=sys.stderr)
        return 2
    return 0 if result else 1


def _trust(args) -> int:
    from studio.core.errors import UserError
    from studio.commands._context import cli_context
    from studio.remote.known_hosts import UnknownHostKey, fingerprint

    entry = _store().get(args.name)
    known = cli_context().known_hosts
    key_type, blob = cli_context().host_key(entry)  # through its jump hosts, like a connection
    print(f"{entry.address} presents {key_type} {fingerprint(key_type, blob)}")
    try:
        line = known.verify(entry.name, entry.host, entry.port, key_type, blob)
        print(f"already trusted ({line.file}:{line.line})")
        return 0
    except UnknownHostKey:
        pass  # HostKeyChanged propagates: a changed key is never trusted from here
    if not args.yes:
        if not sys.stdin.isatty():
            raise UserError("Not trusting a host key without confirmation", entry.name,
                            "Compare the fingerprint above with the server's (ssh-keygen -lf on the server), "
                            "then run again with --yes.")
        answer = input("Is this the server's fingerprint? Trust it [y/N]? ").strip().lower()
        if answer not in ("y", "yes"):
            print("not trusted")
            return 1
    path = known.trust(entry.host, entry.port, key_type, blob)
    print(f"trusted: recorded in {path}")
    return 0


def _run(args) -> int:
    from studio.core.errors import UserError
    from studio.commands._context import cli_context
    from studio.targets.ssh import SshTarget

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    elif "--" in command:
        # argparse's REMAINDER also swallows our options written before "--" (and, depending on
        # the Python version, the "--" itself): split there only when what comes before really
        # is our options — a "--" inside the remote command (grep -- -x) stays in it.
        split = command.index("--")
        extra = argparse.ArgumentParser(prog=f"studio ssh run {args.name}", add_help=False)
        extra.add_argument("--cwd")
        extra.add_argument("--cann", action="store_true")
        parsed, unknown = extra.parse_known_args(command[:split])
        if not unknown:
            command = command[split + 1:]
            args.cwd = parsed.cwd or args.cwd
            args.cann = parsed.cann or args.cann
    if not command:
        raise UserError("No command to run", f"studio ssh run {args.name}",
                        f"Put it after --, e.g. `studio ssh run {args.name} -- uname -a`.")
    entry = _store().get(args.name)
    with SshTarget(entry, cli_context()) as target:
        setup = target.toolkit_setup() if args.cann else None
        if args.cann and setup is None:
            from studio.targets.base import DEFAULT_TOOLKIT, env_setup_line

            setup = env_setup_line(DEFAULT_TOOLKIT)
        # Bytes in, bytes out: binary output, \r\n and a missing final newline arrive unchanged.
        stdin = None if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer
        return target.pipe(command, stdin, sys.stdout.buffer, sys.stderr.buffer, cwd=args.cwd, env_setup=setup)
