""""Test connection" against a real sshd: the checklist, CANN absent or present, refusals."""

from __future__ import annotations

import pytest

from studio.core.jobs import run_job
from studio.remote.hosts import HostEntry
from studio.remote.known_hosts import KnownHosts
from studio.targets.ssh import SshTarget
from studio.targets.probe import FAILED, MISSING, OK, SKIPPED, ProbeResult, _fill, probe, CheckItem, ITEMS


def _statuses(result: ProbeResult) -> dict[str, str]:
    return {i.key: i.status for i in result.items}


def test_checklist_without_cann_reports_missing_with_a_fix(sshd_host, tmp_path):
    entry, known = sshd_host
    entry.toolkit = str(tmp_path / "no-cann-here")
    steps = []
    result = run_job(probe(SshTarget(entry, known), folder=str(tmp_path), latency_runs=2), on_progress=steps.append)
    status = _statuses(result)
    assert [status[k] for k in ("reach", "hostkey", "auth", "latency", "os", "disk")] == [OK] * 6
    assert status["toolkit"] == status["atc"] == status["msprof"] == MISSING
    assert "--toolkit DIR" in result.item("toolkit").fix and "no-cann-here" in result.item("toolkit").detail
    assert result.facts["arch"] and result.facts["free_bytes"] > 0 and result.facts["latency_ms"] > 0
    assert str(tmp_path) in result.item("disk").detail
    assert result and steps[-1].fraction == 1.0


def test_a_toolkit_folder_is_found_with_version_and_tools(sshd_host, tmp_path):
    entry, known = sshd_host
    toolkit = tmp_path / "Ascend" / "ascend-toolkit" / "latest"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "x86_64-linux").mkdir()
    (toolkit / "x86_64-linux" / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\nversion=8.0.RC2\n")
    (toolkit / "set_env.sh").write_text(f'export PATH="{toolkit}/bin:$PATH"\n')
    for tool in ("atc", "msprof"):
        (toolkit / "bin" / tool).write_text("#!/bin/sh\necho fake\n")
        (toolkit / "bin" / tool).chmod(0o755)
    entry.toolkit = str(toolkit)
    result = run_job(probe(SshTarget(entry, known), latency_runs=1))
    status = _statuses(result)
    assert [status[k] for k in ("toolkit", "set_env", "atc", "msprof")] == [OK] * 4
    assert "8.0.RC2" in result.item("toolkit").detail and result.facts["cann_version"] == "8.0.RC2"
    assert result.item("atc").detail == str(toolkit / "bin" / "atc")


def test_unknown_key_stops_before_auth_and_keeps_the_key(sshd_host, tmp_path):
    entry, _ = sshd_host
    result = run_job(probe(SshTarget(entry, KnownHosts(read_only=[], own=tmp_path / "own"))))
    status = _statuses(result)
    assert status["reach"] == OK and status["hostkey"] == FAILED and status["auth"] == SKIPPED
    assert result.unknown_key is not None and result.unknown_key.fingerprint.startswith("SHA256:")
    assert "studio ssh trust testhost" in result.item("hostkey").fix
    assert not result


def test_unreachable_port_fails_first_item():
    entry = HostEntry(name="down", host="127.0.0.1", port=1)
    result = run_job(probe(SshTarget(entry, KnownHosts(read_only=[]), timeout=2), timeout=2))
    assert result.item("reach").status == FAILED and "firewall" in result.item("reach").fix
    assert all(i.status == SKIPPED for i in result.items[1:])


def test_npu_smi_and_onnxruntime_facts_are_read():
    result = ProbeResult("h", "h:22", [CheckItem(k, label) for k, label in ITEMS])
    _fill(result, {"os": "Linux 5.10|EulerOS 2.0", "arch": "aarch64",
                   "disk": "/dev/sda1 100 50 4194304 2% /home", "npu_smi": "/usr/local/sbin/npu-smi",
                   "npu_list": "Total Count                    : 8;NPU ID : 0;",
                   "python": "/usr/bin/python3|3.9.9", "ort": "1.17.0|CPUExecutionProvider"},
          "/usr/local/Ascend/ascend-toolkit/latest", "/home/work")
    assert result.item("npu").status == OK and result.facts["npu_count"] == "8"
    assert result.item("onnxruntime").detail.startswith("1.17.0") and result.item("disk").status == OK
    assert "4.0 GiB free at /home/work" in result.item("disk").detail
    assert result.item("toolkit").status == MISSING
