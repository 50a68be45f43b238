"""npu-smi read during a profiled run on a host (the real sshd, the stand-in npu-smi printing
changing values in the real layouts) becomes counter tracks of the fetched profile, aligned with
the run; the readings are checked against what the stand-in itself recorded."""

from __future__ import annotations

import json
import subprocess
import time

import numpy as np

from standins import BIN, make_standin_toolkit, standin_env

from studio.core.jobs import run_job
from studio.runs.config import RunConfig
from studio.targets.ssh import SshTarget
from studio.tools.profiler.loader import open_profile
from studio.tools.profiler.npu_smi import SAMPLES_FILE, parse_info, parse_log
from studio.ops.msprof_host import profile_on_host

INTERVAL = 0.2


def test_npu_smi_readings_during_a_host_run_are_counter_tracks_aligned_with_it(sshd_host, tmp_path, ascend_fixtures):
    entry, known = sshd_host
    record = tmp_path / "npu_smi_record.jsonl"
    entry.toolkit = str(make_standin_toolkit(tmp_path / "cann", ascend_fixtures, STANDIN_NPU_SMI_LAYOUT="910b",
                                             STANDIN_NPU_SMI_RECORD=str(record)))
    entry.extra["deploy_root"] = str(tmp_path / "root")
    config = RunConfig("busy", "date +%s%N; sleep 1.6; date +%s%N", target="testhost")
    before = time.time_ns()
    with SshTarget(entry, known) as target:
        result = run_job(profile_on_host(target, config, tmp_path / "out", npu_smi_interval=INTERVAL))
    after = time.time_ns()
    app_start, app_end = [int(line) for line in result.output if line.isdigit() and len(line) >= 18][:2]

    calls = [json.loads(line) for line in record.read_text().splitlines()]
    readings = calls[1:]  # the first call is the check that the NPU answers
    # 1.6 s at 0.2 s gives up to 8; each reading starts a process (the stand-in under `timeout`),
    # which on a loaded machine takes longer than the interval: at least 4 leave a track to align
    assert result.npu_smi_samples >= 4 and len(readings) - 1 <= result.npu_smi_samples <= len(readings)
    assert (result.folder / SAMPLES_FILE).is_file()

    trace = run_job(open_profile(result.folder, use_cache=False))
    counters = {(c.process, c.name): c for c in trace.counters}
    for npu in (0, 1):
        process = f"npu-smi NPU {npu} (910B3)"
        for column in ("AICore(%)", "HBM-Usage(MB)", "Power(W)", "Temp(C)"):
            counter = counters[(process, column)]
            expected = [call["npus"][npu]["values"][column] for call in readings[:result.npu_smi_samples]]
            assert counter.values.tolist() == expected, (process, column)
            assert counter.source == SAMPLES_FILE
        assert (process, "Memory-Usage(MB)") not in counters  # 910B's "0 / 0": no such memory
    # On the host's clock, as msprof stamps its timeline: within the run, and sampling the app while it ran.
    stamps = counters[("npu-smi NPU 0 (910B3)", "AICore(%)")].times + trace.origin_ns
    assert before <= stamps.min() and stamps.max() <= after
    # Each reading at the time it was taken: the stamp (the middle of the host shell's clock before
    # and after the call) is nearer its own call than any other, however long the stand-in took to start.
    middles = np.array([(call["t0_ns"] + call["t1_ns"]) // 2 for call in readings])
    for index, stamp in enumerate(stamps.tolist()):
        assert int(np.argmin(np.abs(middles - stamp))) == index
    assert ((stamps > app_start) & (stamps < app_end)).sum() >= 3
    assert "npu_smi_samples.json" in trace.facts["counters source"]


def test_the_310_layout_and_a_sample_cut_short(tmp_path):
    env = standin_env(tmp_path, STANDIN_NPU_SMI_RECORD=str(tmp_path / "record.jsonl"))
    out = subprocess.run([str(BIN / "npu-smi"), "info"], env=env, capture_output=True, text=True, check=True).stdout
    call = json.loads((tmp_path / "record.jsonl").read_text())
    (sample,) = parse_info(out.splitlines(), 7)
    assert (sample.npu, sample.chip, sample.name) == (0, 0, "310")
    expected = call["npus"][0]["values"]
    assert {k: v for k, v in sample.values.items() if k in expected} == expected
    assert sample.values["Memory-Usage(MB) total"] == 8192
    log = (f"@@studio-npu-smi 1700000000000000000 1700000000200000000\n{out}\n@@studio-npu-smi-end\n"
           f"@@studio-npu-smi 1700000001000000000 1700000001200000000\n{out[:200]}")
    (only,) = parse_log(log)  # the second reading never ended (the run stopped mid-sample)
    assert only.time_ns == 1700000000100000000


def test_a_pytorch_run_collected_from_a_host_gets_its_npu_smi_tracks(sshd_host, tmp_path, ascend_fixtures,
                                                                     real_profiles):
    from studio.ops.msprof_host import collect_on_host

    entry, known = sshd_host
    record = tmp_path / "npu_smi_record.jsonl"
    entry.toolkit = str(make_standin_toolkit(tmp_path / "cann", ascend_fixtures, STANDIN_NPU_SMI_RECORD=str(record)))
    entry.extra["deploy_root"] = str(tmp_path / "root")
    rank = real_profiles / "cluster_pytorch/msinsight_text_2rank_level2/level2/rank0_ascend_pt"
    work = tmp_path / "train"
    work.mkdir()
    script = f"sleep 1.2 && mkdir -p prof && cp -r {rank} prof/new_ascend_pt && echo trained"
    with SshTarget(entry, known) as target:
        result = run_job(collect_on_host(target, RunConfig("train", script, workdir=str(work), target="testhost"),
                                         "prof", tmp_path / "out", npu_smi_interval=INTERVAL))
    readings = [json.loads(line) for line in record.read_text().splitlines()][1:]
    assert result.npu_smi_samples >= 4 and len(readings) - 1 <= result.npu_smi_samples <= len(readings)
    trace = run_job(open_profile(result.folder, use_cache=False))
    counter = next(c for c in trace.counters if (c.process, c.name) == ("npu-smi NPU 0 (310)", "AICore(%)"))
    assert counter.values.tolist() == [r["npus"][0]["values"]["AICore(%)"] for r in readings[:result.npu_smi_samples]]
    assert trace.size > 4000  # the rank's own timeline is drawn too, with the readings beside it
