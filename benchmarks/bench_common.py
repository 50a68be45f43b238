"""Helpers the benchmark scripts share: print one result row, time a function.

Not a benchmark itself (run.py runs ``bench_*.py`` scripts that print rows; this one prints none).
"""

from __future__ import annotations

import json
import statistics
import time


def emit(figure: str, unit: str, ours: float, peer: float, peer_name: str, goal: str) -> None:
    """Print one result row in the format run.py reads."""
    print(json.dumps({"figure": figure, "unit": unit, "ours": round(ours, 5), "peer": round(peer, 5),
                      "peer_name": peer_name, "goal": goal}), flush=True)


def median_time(fn, runs: int) -> float:
    """Median wall time of ``runs`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def loopback_missing() -> str | None:
    """Why the loopback sshd benchmarks cannot run here (no sshd, no scp), or None."""
    import shutil

    from sshd_server import sshd_missing_reason  # tests/ is on sys.path in those scripts

    return sshd_missing_reason() or (None if shutil.which("scp") else "scp (openssh-client) not installed")


def peer_ssh_config(server, path):
    """Write an OpenSSH client config naming the loopback server ``bench`` (the peer's ssh / scp
    use it: the same key and known hosts as Studio, batch mode); returns ``path``."""
    path.write_text(f"Host bench\n HostName {server.host}\n Port {server.port}\n User {server.user}\n"
                    f" IdentityFile {server.client_key}\n IdentitiesOnly yes\n"
                    f" UserKnownHostsFile {server.known_hosts}\n StrictHostKeyChecking yes\n BatchMode yes\n")
    return path
