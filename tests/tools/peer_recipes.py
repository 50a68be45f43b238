"""msprof-analyze (the peer the cluster analyses are checked against), run on copies of the sets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PEER = Path(sys.executable).parent / "msprof-analyze"


def run_recipes(runs: dict[str, list[str]], tmp_path_factory) -> Path:
    """``msprof-analyze cluster ARGS -o ROOT/KEY`` for each ``KEY: ARGS``, all started at once; returns
    ROOT, or skips the test when msprof-analyze is not installed."""
    if not PEER.exists():
        pytest.skip(f"msprof-analyze not installed next to {sys.executable}")
    root = tmp_path_factory.mktemp("peer")
    procs = [subprocess.Popen([str(PEER), "cluster", *args, "-o", str(root / key)], cwd=root,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for key, args in runs.items()]
    for proc in procs:
        proc.wait(timeout=180)
    return root
