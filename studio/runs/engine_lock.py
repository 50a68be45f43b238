"""One set-up of Studio's engine at a time on a host: a ``mkdir`` lock in the engine folder.

Two first runs at once (two terminals, the window and a script, two computers) would both make
the venv and run pip into it, and one fails. The set-up takes ``<engine folder>/.setup-lock``
(``mkdir`` is atomic on every POSIX file system, NFS included) with its owner noted; the other
waits, then looks again and finds the engine ready. The holder touches the lock every
HEARTBEAT_S; a lock untouched for STALE_S (its set-up was killed, its link cut) is taken over.
Reusing a ready engine takes no lock.
"""

from __future__ import annotations

import shlex
import socket
import threading
import time
from collections.abc import Generator

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress

LOCK_NAME = ".setup-lock"
HEARTBEAT_S = 20
STALE_S = 120
WAIT_S = 1.0
GIVE_UP_S = 3600


class SetupLock:
    """A held set-up lock; :meth:`release` removes it (only if it is still ours)."""

    def __init__(self, target, path: str, owner: str):
        self.target, self.path, self.owner = target, path, owner
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="engine-setup-lock", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self.target.run_script(f"touch -- {shlex.quote(self.path)}", timeout=30)
            except Exception:  # the link is gone: the lock goes stale and the next set-up takes it over
                return

    def release(self) -> None:
        self._stop.set()
        q = shlex.quote(self.path)
        try:
            self.target.run_script(f'[ "$(cat {q}/owner 2>/dev/null)" = {shlex.quote(self.owner)} ] && rm -rf -- {q}',
                                   timeout=30)
        except Exception:  # the link is gone: the lock goes stale
            pass


def _try_script(path: str, owner: str) -> str:
    """Take the lock (print ``got``) or say who holds it and for how long it was not touched."""
    q = shlex.quote(path)
    return (f"if mkdir -m 700 -- {q} 2>/dev/null; then printf '%s\\n' {shlex.quote(owner)} > {q}/owner; echo got; "
            f"else echo \"held $(( $(date +%s) - $(stat -c %Y -- {q} 2>/dev/null || date +%s) )) "
            f"$(head -c 200 {q}/owner 2>/dev/null | tr -d '\\n')\"; fi")


def _break_script(path: str) -> str:
    """Move a stale lock aside (one breaker wins the rename) and remove it."""
    q = shlex.quote(path)
    aside = shlex.quote(f"{path}.stale-{time.monotonic_ns()}")
    return f"mv -- {q} {aside} 2>/dev/null && rm -rf -- {aside}; true"


def hold_setup_lock(target, folder: str, cancel: CancelToken | None = None
                    ) -> Generator[Progress, None, SetupLock]:
    """Wait for and take the set-up lock of the engine folder ``folder`` on ``target``."""
    import os

    path = f"{folder}/{LOCK_NAME}"
    owner = f"{socket.gethostname()} pid {os.getpid()} {time.strftime('%Y-%m-%d %H:%M:%S')}"
    start = time.monotonic()
    while True:
        if cancel is not None:
            cancel.raise_if_cancelled()
        status, out, err = target.run_script(_try_script(path, owner), timeout=30)
        answer = out.decode("utf-8", "replace").strip().splitlines()
        answer = answer[-1] if answer else ""
        if answer == "got":
            return SetupLock(target, path, owner)
        if not answer.startswith("held "):
            raise UserError(f"Cannot take the set-up lock of Studio's engine on {target.where}: "
                            f"{err.decode('utf-8', 'replace').strip() or answer}", f"{target.where}:{path}",
                            "Check the free disk space and the folder's permissions there.")
        _, idle, *who = answer.split(" ", 2)
        if idle.isdigit() and int(idle) > STALE_S:
            yield Progress(None, f"taking over a stale set-up lock on {target.where} ({' '.join(who)})")
            target.run_script(_break_script(path), timeout=30)
            continue
        if time.monotonic() - start > GIVE_UP_S:
            raise UserError(f"Another set-up of Studio's engine on {target.where} has held its lock for over an "
                            f"hour ({' '.join(who)})", f"{target.where}:{path}",
                            "If no other Studio is setting up the engine there, remove that folder.")
        yield Progress(None, f"waiting for another set-up of Studio's engine on {target.where} ({' '.join(who)})")
        if cancel is not None:
            cancel.wait(WAIT_S)
        else:
            time.sleep(WAIT_S)
