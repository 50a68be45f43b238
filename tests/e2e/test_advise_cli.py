"""``studio advise`` end to end: report files, --json keys, --apply, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from advisor_helpers import host_sleep_trace, mish_cnn

ROOT = Path(__file__).resolve().parents[2]


def studio(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "studio", "advise", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd or ROOT, timeout=300)


def test_advise_json_and_report_file(tmp_path):
    model = mish_cnn(tmp_path / "m.onnx")
    trace = host_sleep_trace(tmp_path / "t.json")
    out = studio("--model", model, "--profile", trace, "--json", "-o", tmp_path / "r.html")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {"findings", "roofline", "summary"} <= set(data)
    assert {"host-gap", "decomposed-mish", "fusion-conv-bn"} <= {f["id"] for f in data["findings"]}
    assert all(f["source"] in ("studio", "msprof-analyze") for f in data["findings"])
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_advise_apply_writes_the_fixed_model(tmp_path):
    model = mish_cnn(tmp_path / "m.onnx")
    fixed = tmp_path / "fixed.onnx"
    out = studio("--model", model, "--apply", "-o", fixed, "--allow-accuracy-change", "--iterations", "5",
                 "--warmup", "1", "--report", tmp_path / "loop.md", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert fixed.is_file() and set(data["loop"]["applied"]["fixes"]) == {"ConvBnFusion", "MishToLeakyRelu"}
    assert data["loop"]["outputs"][0]["output"] == "pool"
    assert "Closed loop" in (tmp_path / "loop.md").read_text()


def test_advise_apply_without_the_tick_applies_exact_fixes_only(tmp_path):
    model = mish_cnn(tmp_path / "m.onnx")
    out = studio("--model", model, "--apply", "-o", tmp_path / "f.onnx", "--iterations", "3", "--warmup", "0", "--json")
    assert out.returncode == 0, out.stderr
    loop = json.loads(out.stdout)["loop"]
    assert loop["applied"]["fixes"] == ["ConvBnFusion"] and loop["accuracy_passed"]


def test_advise_bad_input(tmp_path):
    out = studio()
    assert out.returncode == 2 and "Nothing to advise on" in out.stderr
    for option in ("--model", "--profile", "--accuracy", "--bench"):
        out = studio(option, tmp_path / "missing.file")
        assert out.returncode == 2 and "Traceback" not in out.stderr, (option, out.stderr)
        assert "missing.file" in out.stderr, (option, out.stderr)
    out = studio("--model", mish_cnn(tmp_path / "m.onnx"), "--apply", "-o", tmp_path / "r.html")
    assert out.returncode == 2 and "--apply needs -o FIXED.onnx" in out.stderr
    out = studio("--model", mish_cnn(tmp_path / "m2.onnx"), "--measure-budget", "0")
    assert out.returncode == 2 and "--measure-budget 0 is not a time" in out.stderr


def test_advise_apply_prints_every_pass_and_the_size(tmp_path):
    """What --apply prints names the fix with its count, the other passes that ran and the sizes."""
    model = mish_cnn(tmp_path / "m.onnx")
    out = studio("--model", model, "--apply", "-o", tmp_path / "f.onnx", "--iterations", "2", "--warmup", "0",
                 "--no-measure")
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.strip().startswith("applied"))
    size = (tmp_path / "f.onnx").stat().st_size
    assert "applied ConvBnFusion x3" in line and f"{model.stat().st_size / 1000:.1f} KB -> {size / 1000:.1f} KB" in line
