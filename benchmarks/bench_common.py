"""Helpers the benchmark scripts share: print one result row, time a function.

Not a benchmark itself (run.py runs ``bench_*.py`` scripts that print rows; this one prints none).
The tests' helpers (the loopback sshd, the stand-in tools, the model builders) import by name:
run.py puts the checkout, tests/ and tests/tools/ on the scripts' PYTHONPATH.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def emit(figure: str, unit: str, ours: float, peer: float, peer_name: str, goal: str) -> None:
    """Print one result row in the format run.py reads."""
    print(json.dumps({"figure": figure, "unit": unit, "ours": round(ours, 5), "peer": round(peer, 5),
                      "peer_name": peer_name, "goal": goal}), flush=True)


@contextmanager
def scratch_folder(prefix: str, parent: Path | None = None):
    """``with scratch_folder(prefix) as work``: a new folder (under ``parent``), deleted afterwards."""
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def wait_until(predicate, timeout_s: float) -> bool:
    """Turn the Qt event loop until ``predicate()`` holds; False when ``timeout_s`` passed first."""
    from PySide6.QtTest import QTest

    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        QTest.qWait(5)
    return True


def idle_worst(interval_ms: int = 5, seconds: float = 0.6) -> int:
    """The worst gap (ms) of the tests' GUI timer with no job running: the machine's own floor."""
    from gui_ticks import Ticks

    with Ticks(interval_ms) as ticks:
        wait_until(lambda: False, seconds)
    return max(ticks.gaps, default=0)


def run_measured(command: list[str], env: dict, cwd: Path = REPO) -> tuple[float, float, float]:
    """(wall s, CPU s of the tree, peak MB of the tree's summed RSS) of ``command``, sampled every 50 ms."""
    import subprocess

    import psutil

    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    root = psutil.Process(process.pid)
    peak, cpu = 0, {}
    while process.poll() is None:
        try:
            family = [root, *root.children(recursive=True)]
            total = 0
            for member in family:
                try:
                    total += member.memory_info().rss
                    times = member.cpu_times()
                    cpu[member.pid] = times.user + times.system
                except psutil.Error:
                    pass
            peak = max(peak, total)
        except psutil.Error:
            pass
        time.sleep(0.05)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"{command} failed:\n{process.stderr.read().decode()[-2000:]}")
    return wall, sum(cpu.values()), peak / 1e6


def median_time(fn, runs: int) -> float:
    """Median wall time of ``runs`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def loopback_missing(peer_tools: tuple[str, ...] = ("ssh", "scp")) -> str | None:
    """Why the loopback sshd benchmarks cannot run here (no sshd, or a peer's OpenSSH client tool
    missing), or None."""
    import shutil

    from sshd_server import sshd_missing_reason  # tests/ is on PYTHONPATH (run.py)

    missing = [tool for tool in peer_tools if not shutil.which(tool)]
    return sshd_missing_reason() or (f"{' and '.join(missing)} not installed (apt-get install openssh-client)"
                                     if missing else None)


def skipping(what: str, reason: str) -> None:
    """Say on stderr which figures this script leaves out, and why (run.py shows it)."""
    print(f"{Path(sys.argv[0]).name}: skipping {what}: {reason}", file=sys.stderr, flush=True)


EVERY_FIGURE = "every figure (they need a loopback sshd and OpenSSH's ssh and scp as the peer)"


def loopback_sshd(prefix: str, peer_tools: tuple[str, ...] = ("ssh", "scp"), what: str = EVERY_FIGURE):
    """(a fresh work folder, a started loopback sshd in it) for a benchmark, or None (``what`` is
    skipped and why is printed) where sshd or one of ``peer_tools`` is missing. The caller stops the
    server."""
    reason = loopback_missing(peer_tools)
    if reason:
        skipping(what, reason)
        return None
    from sshd_server import start_sshd

    root = Path(tempfile.mkdtemp(prefix=prefix))
    return root, start_sshd(root / "sshd")


@contextmanager
def scratch_folder(prefix: str):
    """``with scratch_folder(prefix) as work``: a fresh temporary folder, deleted afterwards
    whatever the benchmark did (its models and outputs never outlive the run)."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def loopback_session(prefix: str, peer_tools: tuple[str, ...] = ("ssh", "scp"), what: str = EVERY_FIGURE):
    """``with loopback_session(prefix) as started``: ``started`` is (work folder, loopback sshd) as
    :func:`loopback_sshd` gives them, or None where the benchmark cannot run; the server is stopped
    and the folder deleted afterwards."""
    started = loopback_sshd(prefix, peer_tools, what)
    if started is None:
        yield None
        return
    root, server = started
    try:
        yield root, server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def peer_ssh_config(server, path):
    """Write an OpenSSH client config naming the loopback server ``bench`` (the peer's ssh / scp
    use it: the same key and known hosts as Studio, batch mode); returns ``path``."""
    path.write_text(f"Host bench\n HostName {server.host}\n Port {server.port}\n User {server.user}\n"
                    f" IdentityFile {server.client_key}\n IdentitiesOnly yes\n"
                    f" UserKnownHostsFile {server.known_hosts}\n StrictHostKeyChecking yes\n BatchMode yes\n")
    return path


class OpenSshPeer:
    """The peer of a round-trip figure: OpenSSH's own ``ssh`` and ``scp`` run by hand against the
    loopback server (named ``bench`` in a client config written to ``root/ssh_config``)."""

    def __init__(self, server, root: Path, timeout: float):
        self.root = root
        self.config = str(peer_ssh_config(server, root / "ssh_config"))
        self.timeout = timeout
        self._runs = iter(range(1_000_000))

    def fresh(self, name: str = "host-peer") -> tuple[str, Path]:
        """A new work folder's path on the host (``root/name/N``, not created) and a new, created local
        folder (``root/peer/N``) for one run."""
        n = next(self._runs)
        local = self.root / "peer" / str(n)
        local.mkdir(parents=True)
        return f"{self.root}/{name}/{n}", local

    def ssh(self, command: str) -> subprocess.CompletedProcess:
        """``ssh bench COMMAND``; raises when it fails."""
        return self._run("ssh", "-F", self.config, "bench", command)

    def scp(self, *args: str) -> subprocess.CompletedProcess:
        """``scp -q ARGS`` (the host is ``bench:``); raises when it fails."""
        return self._run("scp", "-q", "-F", self.config, *args)

    def _run(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, check=True, capture_output=True, timeout=self.timeout)


def ours_and_peer_times(ours, peer, runs: int) -> tuple[float, float]:
    """Median seconds of ``ours`` and of ``peer`` over ``runs`` calls each, after one untimed call
    of both (a warm-up, and a check that both work)."""
    ours()
    peer()
    return median_time(ours, runs), median_time(peer, runs)
