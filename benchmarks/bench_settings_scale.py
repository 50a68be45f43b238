"""Reading settings files that grew: ``studio ssh list`` with 500 and 2,000 hosts in hosts.toml.

Every key of every host is placed (file, line) as it is read, so that a bad value is named by its
line; the places are indexed once per file. The peer is OpenSSH reading an ssh_config with the
same hosts (``ssh -G -F FILE hostN``: it parses the whole file to print one host's options), in the
same run. Goal: 2,000 hosts listed in under a second.

Usage: ``python benchmarks/run.py bench_settings_scale.py [--quick]``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_common import emit, median_time, skipping

REPO = Path(__file__).resolve().parents[1]


def write_hosts(home: Path, count: int) -> Path:
    """A hosts.toml of ``count`` hosts (each with a jump, a key and an extra table) and the same
    hosts as an OpenSSH config; returns the ssh config's path."""
    config = home / "config"
    config.mkdir(parents=True, exist_ok=True)
    toml, ssh = [], []
    for i in range(count):
        toml.append(f'[hosts.box{i}]\nhost = "10.0.{i // 250}.{i % 250}"\nport = {2200 + i % 50}\nuser = "ops"\n'
                    f'auth = "key"\nkey_file = "~/.ssh/id_{i}"\nproxy_jump = "box0"\n\n'
                    f'[hosts.box{i}.extra]\ndeploy_root = "/home/ops/w{i}"\n')
        ssh.append(f"Host box{i}\n    HostName 10.0.{i // 250}.{i % 250}\n    Port {2200 + i % 50}\n    User ops\n"
                   f"    IdentityFile ~/.ssh/id_{i}\n    ProxyJump box0\n")
    (config / "hosts.toml").write_text("\n".join(toml))
    (home / "ssh_config").write_text("\n".join(ssh))
    return home / "ssh_config"


def ssh_list_s(home: Path, runs: int) -> float:
    """Median wall time of ``studio ssh list --json`` (a process each, as a user runs it)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), STUDIO_HOME=str(home))

    def once():
        subprocess.run([sys.executable, "-m", "studio", "ssh", "list", "--json"], env=env, check=True,
                       capture_output=True, timeout=600)

    return median_time(once, runs)


def main() -> int:
    quick = "--quick" in sys.argv
    runs = 3 if quick else 5
    root = Path(tempfile.mkdtemp(prefix="studio-bench-settings-"))
    try:
        start_s = ssh_list_s(root / "empty", runs)  # the CLI's own start-up, for scale
        for count in (500, 2000):
            home = root / f"h{count}"
            ssh_config = write_hosts(home, count)
            ours = ssh_list_s(home, runs)
            if shutil.which("ssh"):
                peer = median_time(lambda: subprocess.run(["ssh", "-G", "-F", str(ssh_config), f"box{count - 1}"],
                                                          check=True, capture_output=True, timeout=60), runs)
                emit(f"ssh list: {count:,} hosts (start-up alone {start_s:.2f} s)", "s", ours, peer,
                     "OpenSSH `ssh -G` on the same hosts", "under 1 s at 2,000 hosts")
            else:
                skipping("the OpenSSH peer figure", "ssh (openssh-client) not installed")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
