"""``studio accuracy reduce|precision --target om --host NAME`` against the test sshd: each check is
ATC on the host (a stand-in that keeps the ONNX beside the .om) and ``ais_bench --acl_json_path``
dumping every op as an FP16 device would (tests/cann_standins/py/standin_device.py), the NPU dump
fetched back; one upload, one run and one fetch per check. The repro's commands.sh holds the
``atc`` and run commands, and running them on the stand-in toolkit reproduces the failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx

from standins import PY, write_host
from test_cli import REPO, run_studio
from studio.tools.demo.journeys import build_fp16_frontend, frames_with_silence


def _toolkit(folder: Path) -> Path:
    """A "CANN toolkit": atc and python3 (the test interpreter, which has onnxruntime) on PATH,
    the stand-ins' ais_bench and device on PYTHONPATH."""
    (folder / "bin").mkdir(parents=True)
    for name, body in (("atc", 'exec python3 -m standin_device atc "$@"'), ("python3", f'exec {sys.executable} "$@"')):
        (folder / "bin" / name).write_text(f"#!/bin/sh\n{body}\n")
        os.chmod(folder / "bin" / name, 0o755)
    (folder / "set_env.sh").write_text(f'export PATH="{folder}/bin:$PATH"\n'
                                       f'export PYTHONPATH="{PY}:{REPO}:${{PYTHONPATH:-}}"\n')
    return folder


def test_reduce_and_precision_run_on_an_om_on_the_host(sshd, studio_home, tmp_path):
    toolkit = _toolkit(tmp_path / "cann")
    write_host(studio_home, sshd, toolkit, deploy_root=str(tmp_path / "deploy"))
    model = tmp_path / "fp16_frontend.onnx"
    onnx.save(build_fp16_frontend(), model)
    out = tmp_path / "repro"
    done = run_studio("accuracy", "reduce", str(model), "--target", "om", "--host", "box", "-o", str(out), "--json",
                      home=studio_home, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["target"], data["ops"], data["inputs"]) == ("om", ["power/real_sq"], ["dft/real"])
    assert data["host_round_trips"] == 1 + 3 * data["target_runs"]  # the work folder, then 3 per check
    commands = (out / "commands.sh").read_text()
    assert "atc --model=model.onnx --framework=5 --output=model --soc_version=Ascend310" in commands
    assert "python3 -m ais_bench --model model.om --input inputs/0.bin" in commands

    # The host's half of commands.sh, run on the stand-in toolkit, then compared here: the square fails.
    host_lines = commands.split("in a copy of this folder:\n")[1].split("# back here")[0]
    subprocess.run(["sh", "-c", f". {toolkit}/set_env.sh && cd {out} && {host_lines.replace(chr(10), ' && ')} true"],
                   check=True, capture_output=True, timeout=300)
    npu_dump = next(p for p in (out / "dump").rglob("*") if p.is_file()).parent
    feeds = dict(np.load(out / "inputs.npz"))
    studio = [sys.executable, "-m", "studio"]
    subprocess.run([*studio, "dump", str(out / "model.onnx"), "-o", str(out / "fp32"),
                    *(f"--input={k}={out / 'inputs' / (k.replace('/', '_') + '.npy')}" for k in feeds)],
                   check=True, capture_output=True, timeout=300, cwd=REPO)
    compared = subprocess.run([*studio, "compare", str(out / "fp32"), str(npu_dump), "--json"],
                              capture_output=True, text=True, timeout=300, cwd=REPO)
    rows = json.loads(compared.stdout)["rows"]
    assert [r["name"] for r in rows if r["pass"] is False] == ["power/real_sq"]  # the cut's input: golden only

    silence = tmp_path / "silence.npy"
    np.save(silence, frames_with_silence())
    done = run_studio("accuracy", "precision", str(model), "--target", "om", "--host", "box", "-o",
                      str(tmp_path / "set"), "--input", f"frames={silence}", "--no-latency", "--json",
                      home=studio_home, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["keep_fp32"] == ["log/add_floor", "log/log"] and found["minimal"]
    assert found["target_runs"] == found["checks"] + 1
    assert found["host_round_trips"] == 1 + 3 * found["target_runs"]


def test_om_needs_a_host_and_a_host_needs_om(studio_home, tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(build_fp16_frontend(), model)
    no_host = run_studio("accuracy", "reduce", str(model), "--target", "om", "-o", str(tmp_path / "r"),
                         home=studio_home)
    assert no_host.returncode == 2 and "--host" in no_host.stderr and "Traceback" not in no_host.stderr
    stray = run_studio("accuracy", "precision", str(model), "--host", "box", "-o", str(tmp_path / "p"),
                       home=studio_home)
    assert stray.returncode == 2 and "--target om" in stray.stderr
