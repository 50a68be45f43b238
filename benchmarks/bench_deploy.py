"""Deployment sync against OpenSSH tools, in the same run, on a real sshd on 127.0.0.1.

Figures (``--quick`` uses smaller sizes):
  * upload 5,000 files of 4 KiB into an empty remote folder, and download them into an empty local
    one: ``studio deploy upload`` / ``download`` engine vs ``rsync -a -e ssh`` (goal: 1.5x faster);
  * one 200 MB file up and down: our engine vs ``scp`` (goal: at least 80 % of scp's throughput);
  * no-op status of a 10,000-file deployment: our status vs ``rsync -a -n -i --delete`` (goal < 1 s).

Ours includes connecting, listing both sides and planning, as the CLI does. Needs openssh-server,
openssh-client and rsync (``apt-get install -y openssh-server rsync``). Prints JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import loopback_missing, skipping

REPO = Path(__file__).resolve().parents[1]

def _ssh_config(sshd, path: Path) -> Path:
    path.write_text("\n".join([
        "Host bench", f"  HostName {sshd.host}", f"  Port {sshd.port}", f"  User {sshd.user}",
        f"  IdentityFile {sshd.client_key}", "  IdentitiesOnly yes", f"  UserKnownHostsFile {sshd.known_hosts}",
        "  StrictHostKeyChecking yes", "  BatchMode yes", ""]))
    return path


def _tree(root: Path, count: int, size: int) -> None:
    for i in range(count):
        path = root / f"d{i % 100:02}" / f"f{i:05}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _runs(ours: list[float], peer: list[float]) -> dict:
    """Every repeat's figures, and each repeat's ours/peer ratio (the two ran back to back, so on a
    busy machine the paired ratio varies less than the ratio of the medians)."""
    return {"ours_runs": [round(x, 4) for x in ours], "peer_runs": [round(x, 4) for x in peer],
            "ratio_runs": [round(a / b, 3) for a, b in zip(ours, peer)]}


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def bench_small(ours, work: Path, count: int, repeat: int, ssh: str, direction: str = "upload") -> dict:
    """``count`` files of 4 KiB into an empty folder on the other side (``direction``: upload or
    download), ours against rsync."""
    source = work / f"small_{direction}"
    _tree(source, count, 4096)
    ours_t, peer_t = [], []
    # The copies are deleted after the last repeat, not between: ext4 makes new files slowly for a
    # minute or more after many were deleted (it skips recently freed inodes; measured here up to
    # 1 ms per file), which would fall on whichever tool ran next. Who goes first alternates.
    for i in range(repeat):
        target, peer_target = work / f"{direction}_ours_{i}", work / f"{direction}_rsync_{i}"
        local, remote = (source, target) if direction == "upload" else (target, source)
        peer = [f"{source}/", f"bench:{peer_target}/"] if direction == "upload" else [f"bench:{source}/",
                                                                                     f"{peer_target}/"]
        for turn in ((0, 1) if i % 2 == 0 else (1, 0)):
            if turn == 0:
                ours_t.append(_timed(lambda: ours(f"small{direction}{i}", local, remote, direction)))
                assert len(list(target.rglob("*.bin"))) == count
            else:
                peer_t.append(_timed(lambda: _sh("rsync", "-a", "-e", ssh, *peer)))
    for i in range(repeat):
        for folder in (work / f"{direction}_ours_{i}", work / f"{direction}_rsync_{i}"):
            shutil.rmtree(folder)
    shutil.rmtree(source)
    return {"figure": f"{direction} {count} x 4 KiB files", "unit": "s", "ours": statistics.median(ours_t),
            "peer": statistics.median(peer_t), "peer_name": "rsync -a -e ssh",
            "goal": "1.5x faster than rsync (ratio <= 0.67)", **_runs(ours_t, peer_t)}


def bench_big(ours, work: Path, size_mb: int, repeat: int, config: Path) -> list[dict]:
    big = work / "big"
    big.mkdir()
    with open(big / "model.bin", "wb") as handle:
        for _ in range(size_mb):
            handle.write(os.urandom(1_000_000))
    up_ours, up_peer, down_ours, down_peer = [], [], [], []
    for i in range(repeat):
        remote, down = work / f"big_remote_{i}", work / f"big_down_{i}"
        up_ours.append(size_mb / _timed(lambda: ours(f"big{i}", big, remote, "upload")))
        down_ours.append(size_mb / _timed(lambda: ours(f"bigdown{i}", down, remote, "download")))
        assert (down / "model.bin").stat().st_size == size_mb * 1_000_000
        up_peer.append(size_mb / _timed(lambda: _sh("scp", "-q", "-F", str(config), str(big / "model.bin"),
                                                    f"bench:{work}/scp_up.bin")))
        down_peer.append(size_mb / _timed(lambda: _sh("scp", "-q", "-F", str(config), f"bench:{remote}/model.bin",
                                                      str(work / "scp_down.bin"))))
        for path in (remote, down):
            shutil.rmtree(path)
    return [{"figure": f"{direction} one {size_mb} MB file", "unit": "MB/s", "ours": statistics.median(mine),
             "peer": statistics.median(theirs), "peer_name": "scp",
             "goal": ">= 80% of scp throughput (ratio >= 0.8)", **_runs(mine, theirs)}
            for direction, mine, theirs in (("upload", up_ours, up_peer), ("download", down_ours, down_peer))]


def bench_status(ours, status_of, work: Path, count: int, repeat: int, ssh: str) -> dict:
    tree, remote = work / "status_local", work / "status_remote"
    _tree(tree, count, 64)
    ours("status", tree, remote, "upload")
    ours_t, peer_t = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        status = status_of(tree, remote)
        ours_t.append(time.perf_counter() - start)
        assert status.plan.unchanged == count and not status.plan.items
        peer_t.append(_timed(lambda: _sh("rsync", "-a", "-n", "-i", "--delete", "-e", ssh, f"{tree}/",
                                         f"bench:{remote}/")))
    return {"figure": f"no-op status of {count} files", "unit": "s", "ours": statistics.median(ours_t),
            "peer": statistics.median(peer_t), "peer_name": "rsync -a -n -i --delete", "goal": "< 1 s",
            **_runs(ours_t, peer_t)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller trees and files")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is printed)")
    parser.add_argument("--only", default="small,big,status", help="comma-separated figures: small, big, status")
    args = parser.parse_args()
    figures = set(args.only.split(","))
    reason = loopback_missing()
    if reason:
        skipping("every figure (a loopback sshd; ssh, scp and rsync are the peers)", reason)
        return 0
    if not shutil.which("rsync") and figures & {"small", "status"}:
        skipping(" and ".join(sorted(figures & {"small", "status"})) + " (rsync is their peer)",
                 "rsync not installed (apt-get install rsync)")
        figures -= {"small", "status"}
    from sshd_server import start_sshd

    from studio.core.jobs import run_job
    from studio.remote.connection import connect
    from studio.tools.deploy.deployments import Deployment
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts
    from studio.tools.deploy.sync import run_job as sync_job
    from studio.tools.deploy.sync import status_job

    n_small, n_status, big_mb = (1000, 2000, 50) if args.quick else (5000, 10000, 200)
    work = Path(tempfile.mkdtemp(prefix="bench_deploy_"))
    os.environ["STUDIO_HOME"] = str(work / "home")  # the synced state goes here, not to the user's folder
    sshd = start_sshd(work / "sshd")
    try:
        config = _ssh_config(sshd, work / "ssh_config")
        ssh = f"ssh -F {config}"
        entry = HostEntry(name="bench", host=sshd.host, port=sshd.port, user=sshd.user, key_file=str(sshd.client_key))
        known = KnownHosts(read_only=[sshd.known_hosts], own=work / "own_known_hosts")

        def connector():
            return connect(entry, known)

        def ours(name: str, local: Path, remote: Path, mode: str) -> None:
            deployment = Deployment(name, "bench", str(local), str(remote))
            _plan, result = run_job(sync_job(deployment, mode, connector))
            assert result.ok, result.summary()

        def status_of(local: Path, remote: Path):
            return run_job(status_job(Deployment("status", "bench", str(local), str(remote)), connector))

        rows = []
        if "small" in figures:
            rows.append(bench_small(ours, work, n_small, args.repeat, ssh))
            print(json.dumps(rows[-1]), flush=True)
            rows.append(bench_small(ours, work, n_small, args.repeat, ssh, "download"))
            print(json.dumps(rows[-1]), flush=True)
        if "big" in figures:
            for row in bench_big(ours, work, big_mb, args.repeat, config):
                print(json.dumps(row), flush=True)
        if "status" in figures:
            print(json.dumps(bench_status(ours, status_of, work, n_status, args.repeat, ssh)), flush=True)
    finally:
        sshd.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
