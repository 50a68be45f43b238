"""Whether a process of this machine still runs, for clean-ups that must not touch a live owner's files."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while a process ``pid`` exists here (also one of another user: signalling it is refused,
    but it is there); False once it is gone. Sends no signal (signal 0 only checks)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, owned by someone else
        return True
    return True
