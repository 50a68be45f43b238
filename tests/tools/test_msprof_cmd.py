"""msprof command, PROF_ folder finding, export and error explanations — and the stand-in msprof."""

from __future__ import annotations

import os
import shlex

import pytest
from standins import use_standins

from studio.runs.where import local_target
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.profiler.msprof_cmd import (MsprofOptions, command_line, diagnose, explain_failure, export_argv,
                                              find_prof_folder, msprof_argv, needs_export)


def test_default_switches_follow_the_facemask_tutorial():
    argv = msprof_argv("/home/u/facemask/out/main --pic 'a b.jpg'", "/home/u/prof out")
    assert argv[:3] == ["msprof", "--application=/home/u/facemask/out/main --pic 'a b.jpg'",
                        "--output=/home/u/prof out"]
    assert {"--ascendcl=on", "--runtime-api=on", "--aicpu=on", "--msproftx=on", "--ai-core=off"} <= set(argv)
    assert not any(a.startswith("--aic-metrics") for a in argv)  # only with ai-core on
    line = command_line(argv)
    assert shlex.split(line) == argv  # every argument survives the shell unchanged


def test_options_from_strings_and_validation():
    options = MsprofOptions.from_strings(["ai-core=on", "aic-metrics=MemoryUB", "task-time=l1", "msproftx=off"])
    switches = options.switches()
    assert "--ai-core=on" in switches and "--aic-metrics=MemoryUB" in switches and "--task-time=l1" in switches
    assert "--msproftx=off" in switches
    with pytest.raises(UserError, match="aic-metrics"):
        MsprofOptions.from_strings(["ai-core=on", "aic-metrics=Bogus"])
    with pytest.raises(UserError, match="on or off"):
        MsprofOptions.from_strings(["ascendcl=yes"])
    with pytest.raises(UserError, match="Unknown msprof option"):
        MsprofOptions.from_strings(["speed=fast"])
    with pytest.raises(UserError, match="absolute"):
        msprof_argv("./app", "prof")


def test_find_prof_folder():
    saved = "[INFO] Process profiling data complete. Data is saved in /home/u/out/PROF_000001_20231123181533123_ABCDEFGHIJKLMNOP"
    assert find_prof_folder(["x", saved, "y"]) == "/home/u/out/PROF_000001_20231123181533123_ABCDEFGHIJKLMNOP"
    sub = "Data is saved in /o/PROF_000001_20231123181533123_ABCDEFGHIJKLMNOP/device_0."
    assert find_prof_folder([sub]) == "/o/PROF_000001_20231123181533123_ABCDEFGHIJKLMNOP"
    printed = "[INFO] Start exporting data in /o/PROF_000002_20231123181533999_QWERTYUIOPASDFGH."
    assert find_prof_folder([printed]) == "/o/PROF_000002_20231123181533999_QWERTYUIOPASDFGH"
    listing = ["PROF_000001_20231123181533123_AAAAAAAAAAAAAAAA/", "PROF_000001_20231124090000000_BBBBBBBBBBBBBBBB",
               "notes.txt"]
    assert find_prof_folder([], "/o", listing) == "/o/PROF_000001_20231124090000000_BBBBBBBBBBBBBBBB"
    assert find_prof_folder(["nothing"], "/o", []) is None


def test_needs_export():
    assert needs_export(["device_0/data/x", "host/data/y"])
    assert not needs_export(["mindstudio_profiler_output/op_summary_1.csv"])
    assert not needs_export(["device_0/summary/op_summary_0_1_1.csv"])
    assert export_argv("/o/PROF_1") == ["msprof", "--export=on", "--output=/o/PROF_1"]


@pytest.mark.parametrize("lines, status, kind", [
    (["bash: line 1: msprof: command not found"], 127, "missing-msprof"),
    (["[ERROR] [msprof] Failed to get the device list: dsmi_get_device_count failed, ret=-8005."], 1, "no-npu"),
    (["dcmi module initialize failed. ret is -8005", "npu-smi info failed"], 255, "no-npu"),
    (["[ERROR] [msprof] Failed to write data: [Errno 28] No space left on device"], 1, "disk-full"),
    (["[ERROR] [msprof] Argument --output=/x is invalid: Permission denied."], 1, "permission"),
    (["[ERROR] [msprof] Argument --output=/x is invalid, the path is a soft link, which is not supported."], 1,
     "symlink"),
    (["something else"], 3, "failed"),
])
def test_diagnose(lines, status, kind):
    assert diagnose(lines, status).kind == kind


def test_explain_failure_names_host_command_log_and_fix():
    err = explain_failure("npu-box", "msprof --application=./main --output=/o", ["No space left on device"], 1,
                          "/home/u/ascend/log/debug/plog/")
    text = str(err)
    assert "on npu-box" in text and "msprof --application=./main" in text and "/home/u/ascend/log/debug/plog/" in text
    assert "df -h" in text and "dfx" not in text


def _run(argv, cwd=None):
    lines = []
    status = run_job(local_target().run(argv, cwd=cwd), on_progress=lambda p: lines.append(p.message))
    return status, lines


def test_standin_msprof_collects_exports_and_the_profiler_opens_it(tmp_path, monkeypatch, ascend_fixtures):
    use_standins(monkeypatch, tmp_path, ascend_fixtures, STANDIN_MSPROF_NO_EXPORT="1")
    out = tmp_path / "prof out"
    app = f"echo app says hi; echo {shlex.quote(str(tmp_path / 'ran'))} > /dev/null"
    status, lines = _run(msprof_argv(app, str(out)))
    assert status == 0, lines
    assert "app says hi" in lines
    prof = find_prof_folder(lines, str(out))
    assert prof and os.path.isdir(prof) and os.path.dirname(prof) == str(out)
    listing = [os.path.relpath(os.path.join(d, f), prof) for d, _, files in os.walk(prof) for f in files]
    assert needs_export(listing)
    status, lines = _run(export_argv(prof))
    assert status == 0, lines
    listing = [os.path.relpath(os.path.join(d, f), prof) for d, _, files in os.walk(prof) for f in files]
    assert not needs_export(listing)
    from studio.tools.profiler.loader import open_profile

    import json

    trace = run_job(open_profile(prof, use_cache=False))
    events = json.loads((ascend_fixtures / "pytorch_npu" / "trace_view.json").read_text())
    assert trace.size == sum(1 for e in events if e.get("ph") == "X")  # every slice of the exported timeline
    assert "op_statistic" in trace.tables


def test_standin_msprof_refuses_symlinked_output(tmp_path, monkeypatch):
    use_standins(monkeypatch, tmp_path)
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    status, lines = _run(msprof_argv("true", str(link / "prof")))
    assert status == 1 and diagnose(lines, status).kind == "symlink"
    assert not list(real.iterdir())
    status, lines = _run(msprof_argv("true", local_target().realpath(str(link / "prof"))))
    assert status == 0 and find_prof_folder(lines).startswith(str(real))


def test_standin_msprof_no_npu_and_disk_full(tmp_path, monkeypatch):
    use_standins(monkeypatch, tmp_path, STANDIN_NO_NPU="1")
    status, lines = _run(msprof_argv("true", str(tmp_path / "o")))
    assert status == 1 and diagnose(lines, status).kind == "no-npu"
    assert list((tmp_path / "ascend_log" / "debug" / "plog").glob("plog-*.log"))
    status, lines = _run(["npu-smi", "info"])
    assert status == 255
    monkeypatch.setenv("STANDIN_NO_NPU", "0")
    monkeypatch.setenv("STANDIN_DISK_FULL", "1")
    status, lines = _run(msprof_argv("true", str(tmp_path / "o")))
    assert status == 1 and diagnose(lines, status).kind == "disk-full"
    status, lines = _run(msprof_argv("true", str(tmp_path / "o"), MsprofOptions(task_time="l1")) + ["--bogus=1"])
    assert status == 1 and "Invalid argument: --bogus" in lines[-1]
