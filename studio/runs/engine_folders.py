"""The engine's folders on a host: made private, refused when someone else could write them.

Studio runs ``ROOT/<version>/venv/bin/python`` on the host. Whoever can write a folder on that
path can put their own program there and have it run as the user, so before anything in it
runs, the probe checks (in the same round trip):

* the folders Studio makes — ``ROOT``, ``ROOT/<version>`` and its ``venv``, ``venv/bin``,
  ``wheels``, ``runs``, ``home`` — belong to the user and nobody else may write them;
* every folder above ``ROOT`` belongs to the user or to root, and is writable neither by its
  group nor by everyone unless it has the sticky bit (``/tmp``), as OpenSSH's ``StrictModes``
  asks of the folders above ``authorized_keys``: else a member of that group could rename
  ``ROOT`` (or a folder above it) away and put their own in its place.

A check on a path is only good for the shell that made it: a folder exchanged right after it is
another folder under the same name. So nothing is run, written or removed by the engine folder's
path in a later command: each command starts with :func:`pinned_script`, which enters the folder
with ``cd -P``, checks again that it is the folder the probe found (same real path, the user's,
written by nobody else, nor the folders above it) and then acts on ``./NAME`` from there.

Everything is made with ``umask 077``: folders 0700, uploaded models and results 0600.

Each run folder holds ``.owner``: this installation's id and the process that made it, so the
next run (from here) removes the folder of a run that was cut — its process is gone — without
touching a run still going on, here or elsewhere.
"""

from __future__ import annotations

import os
import secrets
import shlex

from studio.core.errors import UserError
from studio.core.processes import pid_alive

DEFAULT_ROOT = "~/.cache/studio-remote"
UNSAFE = 4  # exit status of the probe when a folder is unsafe (it printed ``unsafe=...``)
OWNER_FILE = ".owner"
SUBFOLDERS = ("venv", "venv/bin", "wheels", "runs", "home")

# sh functions: own DIR (a folder Studio makes), above DIR (a folder above the root).
_CHECKS = ("U=$(id -u); "
           "bad() { echo \"unsafe=$1\"; exit 4; }; "
           "own() { [ -e \"$1\" ] || return 0; set -- \"$1\" $(stat -Lc '%u %a' -- \"$1\"); "
           "[ \"$2\" = \"$U\" ] || bad \"$1 owner $2\"; [ $(( 0$3 & 022 )) -eq 0 ] || bad \"$1 mode $3\"; }; "
           "above() { set -- \"$1\" $(stat -c '%u %a' -- \"$1\"); "
           "[ \"$2\" = \"$U\" ] || [ \"$2\" = 0 ] || bad \"$1 owner $2\"; "
           "[ $(( 0$3 & 022 )) -eq 0 ] || [ $(( 0$3 & 01000 )) -ne 0 ] || bad \"$1 mode $3\"; }; ")


def env_root(target) -> str:
    """Where engine venvs live on ``target`` (the host entry's ``engine_root``, else the default)."""
    entry = getattr(target, "entry", None)
    root = entry.extra.get("engine_root") if entry is not None else None
    return str(root) if root else DEFAULT_ROOT


def enter_script(root: str, version: str) -> str:
    """``sh`` that makes ``ROOT/VERSION`` (umask 077), checks its folders and sets ``$ENV`` to its
    real path; exits 3 when it cannot be made, UNSAFE (after ``unsafe=PATH owner|mode N``) when
    another user could write one of them. ``~`` at the start of ROOT is the login folder."""
    if root == "~" or root.startswith("~/"):
        rel = root[2:]
        go_root = "cd" + (f" && mkdir -p -- {shlex.quote(rel)} && cd -P -- {shlex.quote(rel)}" if rel else "")
    else:
        go_root = f"mkdir -p -- {shlex.quote(root)} && cd -P -- {shlex.quote(root)}"
    version = shlex.quote(version)
    subs = " ".join(f'"$ENV/{s}"' for s in SUBFOLDERS)
    return (f"umask 077; {_CHECKS}{go_root} && R=$(pwd -P) || exit 3; "
            "own \"$R\"; d=$R; while [ -n \"$d\" ]; do d=${d%/*}; above \"${d:-/}\"; done; "
            f"mkdir -p -- {version} && cd -P -- {version} && ENV=$(pwd -P) || exit 3; "
            f"for f in \"$ENV\" {subs}; do own \"$f\"; done")


def pinned_script(folder: str) -> str:
    """``sh`` that enters the engine folder ``folder`` (the real path the probe found) with
    ``cd -P`` and stays there, after checking in the same shell that it is still that folder
    (the same real path: no symlink put in its place), that it, the root above it and its
    sub-folders are the user's and written by nobody else, and that no folder above the root can
    be written by another user. Exits 3 when it cannot be entered, UNSAFE (after an ``unsafe=``
    line) otherwise; what follows it acts on ``./NAME`` only, so a folder exchanged after the
    check cannot be reached. Ends with a command that succeeds (``... && exec CMD`` may follow)."""
    q = shlex.quote(folder)
    subs = " ".join(f'"./{s}"' for s in SUBFOLDERS)
    return (f"umask 077; {_CHECKS}cd -P -- {q} || exit 3; R=$(pwd -P); "
            f"[ \"$R\" = {q} ] || bad {shlex.quote(folder + ' moved -')}; "
            f"own .; own ..; for f in {subs}; do own \"$f\"; done; "
            "d=${R%/*}; while [ -n \"$d\" ]; do d=${d%/*}; above \"${d:-/}\"; done; :")


def unsafe_line(lines) -> str | None:
    """What follows ``unsafe=`` in a command's output lines (None when it printed none)."""
    return next((line[len("unsafe="):] for line in lines if line.startswith("unsafe=")), None)


def unsafe_error(where: str, root: str, found: str) -> UserError:
    """The refusal for a probe's ``unsafe=PATH owner N``, ``unsafe=PATH mode M`` or
    ``unsafe=PATH moved -`` line."""
    path, kind, value = (found.rsplit(" ", 2) + ["", ""])[:3]
    if kind == "moved":
        return UserError(f"The engine folder {path} on {where} is no longer the folder Studio checked (it was moved, "
                         "or something else was put in its place); nothing was run from it", f"{where}:{path}",
                         f"Look at who else can write the folders above it; point the host entry's engine_root (now "
                         f"{root}) at a folder only you can write, then run again.")
    if kind == "owner":
        what = f"The engine folder {path} on {where} belongs to another user (uid {value})"
    else:
        what = f"The engine folder {path} on {where} can be written by other users or its group (mode {value})"
    return UserError(what + "; Studio would run programs from it as you, so it refuses", f"{where}:{path}",
                     f"Point the host entry's engine_root (now {root}) at a folder of your own, or make this one "
                     f"yours after checking what is inside: `chmod go-w {shlex.quote(path)}` (and chown), as "
                     "OpenSSH's StrictModes asks of the folders above authorized_keys.")


def instance_id() -> str:
    """This installation's id (random, kept in Studio's data folder): whose run folders are whose."""
    from studio.core.paths import data_dir

    path = data_dir() / "instance-id"
    try:
        value = path.read_text().strip()
        if value:
            return value
    except OSError:
        pass
    value = secrets.token_hex(8)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value + "\n")
    return value


ACTIVE: set[str] = set()  # run folders this process is using right now


def owner_line() -> str:
    """What a run folder's ``.owner`` holds: this installation's id and this process."""
    return f"{instance_id()} {os.getpid()}"


def is_stale(folder: str, owner: str) -> bool:
    """True for a run folder whose run was cut: made from this installation by a process that is
    gone (or by this process, but no longer in use). Other installations' folders are never stale
    here (their process cannot be seen); ``studio engine clean`` removes them by age."""
    parts = owner.split()
    if len(parts) != 2 or parts[0] != instance_id() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return folder not in ACTIVE
    return not pid_alive(pid)


def list_runs_script(runs: str) -> str:
    """``sh`` printing ``run=FOLDER<TAB>AGE_S<TAB>OWNER`` for each run folder under ``runs`` (sh text:
    a quoted path, or a pattern such as ``*/runs``)."""
    return (f"now=$(date +%s); for d in {runs}/*/; do [ -d \"$d\" ] || continue; d=${{d%/}}; "
            f"o=$(head -c 200 \"$d/{OWNER_FILE}\" 2>/dev/null | tr -d '\\t\\n'); "
            "m=$(stat -c %Y -- \"$d\" 2>/dev/null || echo $now); "
            "printf 'run=%s\\t%s\\t%s\\n' \"$d\" $((now - m)) \"$o\"; done")


def parse_runs(text: str) -> list[tuple[str, int, str]]:
    """(folder, age in seconds, owner) from :func:`list_runs_script`'s output."""
    runs = []
    for line in text.splitlines():
        if line.startswith("run="):
            folder, _, rest = line[4:].partition("\t")
            age, _, owner = rest.partition("\t")
            runs.append((folder, int(age) if age.lstrip("-").isdigit() else 0, owner))
    return runs
