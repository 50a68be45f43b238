"""Running a snippet of Python in a fresh interpreter where numba cannot be imported.

What a user without the ``fast`` extra gets: ``sys.modules['numba'] = None`` makes every
``import numba`` fail as a missing package would, before any Studio module is imported.
"""

from __future__ import annotations

import subprocess
import sys


def run_without_numba(code: str, timeout: float = 300) -> list[str]:
    """The words ``code`` printed, run by a new interpreter with numba blocked; fails the test on a
    non-zero exit (with its stderr)."""
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['numba'] = None\n" + code],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()
