"""`studio fp16-check MODEL`: the CLI twin of the graph panel's "FP16 check"."""

from __future__ import annotations

import json

from test_cli import run_studio


def test_fp16_check_dumps_both_modes_and_compares(studio_home, tmp_path):
    demo = run_studio("demo", "create", str(tmp_path / "demo"), home=studio_home)
    assert demo.returncode == 0, demo.stderr
    model = tmp_path / "demo" / "models" / "classifier.onnx"
    result = run_studio("fp16-check", str(model), "-o", str(tmp_path / "out"), "--json", home=studio_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    cosines = [row["cosine"] for row in data["rows"] if row["cosine"] is not None]
    assert len(cosines) >= 5 and all(0.99 < c <= 1.0 for c in cosines)  # a small net survives FP16
    assert (tmp_path / "out" / "classifier_fp32" / "manifest.json").is_file()
    assert (tmp_path / "out" / "classifier_fp16sim" / "manifest.json").is_file()
    assert (tmp_path / "out" / "classifier_fp32_vs_fp16sim.csv").is_file()
    manifest = json.loads((tmp_path / "out" / "classifier_fp16sim" / "manifest.json").read_text())
    assert "fp16" in json.dumps(manifest).lower()


def test_fp16_check_of_a_file_that_is_not_onnx_says_why(studio_home, tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model")
    result = run_studio("fp16-check", str(bad), "-o", str(tmp_path / "out"), home=studio_home)
    assert result.returncode == 2 and "error:" in result.stderr and "Traceback" not in result.stderr
