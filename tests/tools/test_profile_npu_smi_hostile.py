"""npu-smi and the host's clock as a broken (or hostile) host answers them, on the real sshd: a
5,000-digit NPU number, a 39-digit clock and an npu-smi that never answers end neither the
profile nor its statistics, and nothing is left running on the host."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from standins import BIN, make_standin_toolkit
from test_cli import run_studio

from studio.core.jobs import run_job
from studio.runs.config import RunConfig
from studio.targets.ssh import SshTarget

INTERVAL = 0.2


def _toolkit(tmp_path: Path, ascend_fixtures: Path, wrappers: dict[str, str]) -> str:
    """The stand-in toolkit, with ``wrappers`` (name -> script) first on PATH."""
    toolkit = make_standin_toolkit(tmp_path / "cann", ascend_fixtures, STANDIN_NPU_SMI_LAYOUT="910b")
    extra = tmp_path / "wrappers"
    extra.mkdir()
    for name, text in wrappers.items():
        (extra / name).write_text(text)
        (extra / name).chmod(0o755)
    with open(toolkit / "set_env.sh", "a") as handle:
        handle.write(f'export PATH="{extra}:$PATH"\n')
    return str(toolkit)


# npu-smi whose first NPU is numbered with 5,000 digits (its chip row and the second NPU stay)
HUGE_NPU = f"""#!{sys.executable}
import re, subprocess, sys
out = subprocess.run([{str(BIN / "npu-smi")!r}, *sys.argv[1:]], capture_output=True, text=True).stdout
print(re.sub(r"^\\| 0 ", "| " + "9" * 5000 + " ", out, count=1, flags=re.M), end="")
"""
# a clock reading of 39 digits where date +%s%N is asked
HUGE_CLOCK = """#!/bin/sh
case "$1" in +%s%N) echo 123456789012345678901234567890123456789 ;; *) exec /bin/date "$@" ;; esac
"""


def _profile(sshd_host, tmp_path, toolkit: str, command: str = "sleep 1"):
    from studio.ops.msprof_host import profile_on_host

    entry, known = sshd_host
    entry.toolkit = toolkit
    entry.extra["deploy_root"] = str(tmp_path / "root")
    with SshTarget(entry, known) as target:
        return run_job(profile_on_host(target, RunConfig("busy", command, target="testhost"), tmp_path / "out",
                                       npu_smi_interval=INTERVAL))


@pytest.mark.parametrize("case", ["5000-digit NPU number", "39-digit host clock"])
def test_absurd_npu_smi_numbers_and_clocks_end_neither_the_profile_nor_its_stats(sshd_host, tmp_path, ascend_fixtures,
                                                                                 studio_home, case):
    from studio.tools.profiler.loader import open_profile

    wrappers = {"npu-smi": HUGE_NPU} if case.startswith("5000") else {"date": HUGE_CLOCK}
    result = _profile(sshd_host, tmp_path, _toolkit(tmp_path, ascend_fixtures, wrappers), "sleep 2")
    trace = run_job(open_profile(result.folder, use_cache=False))
    processes = {c.process for c in trace.counters if c.source == "npu_smi_samples.json"}
    if case.startswith("5000"):
        # NPU 0 has no usable number: only NPU 1's readings became tracks, on the right names
        assert result.npu_smi_samples >= 1 and processes == {"npu-smi NPU 1 (910B3)"}, processes
    else:
        assert result.npu_smi_samples == 0 and processes == set()  # no reading has a time on any clock
    stats = run_studio("profile", "stats", str(result.folder), home=studio_home)
    assert stats.returncode == 0 and "Traceback" not in stats.stderr, stats.stderr[-2000:]


def _running(marker: str) -> list[int]:
    """PIDs whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def test_an_npu_smi_that_hangs_is_not_left_running_on_the_host(sshd_host, tmp_path, ascend_fixtures, monkeypatch):
    from studio.ops import msprof_host

    monkeypatch.setattr(msprof_host, "TIMEOUT_S", 2.0, raising=False)
    calls = tmp_path / "calls"
    marker = f"{tmp_path}/hung-npu-smi"
    # answers the check, then hangs on every reading (a driver gone bad mid-run)
    hangs = f"""#!/bin/sh
echo x >> {calls}
if [ $(wc -l < {calls}) -gt 1 ]; then exec sh -c 'sleep 600; : {marker}'; fi
exec {BIN / "npu-smi"} "$@"
"""
    try:
        result = _profile(sshd_host, tmp_path, _toolkit(tmp_path, ascend_fixtures, {"npu-smi": hangs}))
        assert result.npu_smi_samples == 0
        deadline = time.monotonic() + 8
        while _running(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _running(marker) == [], "npu-smi still runs on the host after the profile"
    finally:
        for pid in _running(marker):  # what this test started, if it was left
            os.kill(pid, 9)
