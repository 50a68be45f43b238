"""``studio quantize`` on the command line: the report, ``--json``'s sensitivity and fallback, and a
bad calibration folder ending in one clear error with nothing written."""

from __future__ import annotations

import json

import numpy as np

from quantize_helpers import chain_model, samples
from test_cli import run_studio


def _calib(path, count=12, seed=1):
    np.savez(path, x=np.concatenate([s["x"] for s in samples(count, seed)]))
    return path


def test_quantize_json_names_the_sensitive_layer_and_the_fallback(studio_home, tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=2)
    done = run_studio("quantize", str(model), "-o", str(tmp_path / "q.onnx"), "--calib", str(_calib(tmp_path / "c.npz")),
                      "--min-cosine", "0.99", "--budget", "0.2", "--json", home=studio_home)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["sensitivity"][0]["name"] == "mm2" and data["fallback"] == ["mm2"]
    assert {s["method"]: s["size"] for s in data["searches"]} == {"ddmin": 1, "ranked-binary": 1}
    assert [row["name"] for row in data["table"]] == ["FP32", "INT8", "mixed"]
    assert data["table"][2]["latency"]["verdict"] in ("faster", "slower", "no significant change")
    assert (tmp_path / "q.onnx").is_file() and (tmp_path / "q.ranges.json").is_file()

    text = run_studio("quantize", str(model), "-o", str(tmp_path / "q.onnx"), "--calib", str(tmp_path / "c.npz"),
                      "--min-cosine", "0.99", "--no-timing", home=studio_home)
    assert text.returncode == 0, text.stderr
    assert "(ranges reused)" in text.stdout and "fallback (left in float): mm2" in text.stdout
    assert "ddmin          1 layer(s) in float" in text.stdout


def test_quantize_of_an_empty_folder_is_one_clear_error(studio_home, tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model)
    (tmp_path / "empty").mkdir()
    done = run_studio("quantize", str(model), "-o", str(tmp_path / "q.onnx"), "--calib", str(tmp_path / "empty"),
                      home=studio_home)
    assert done.returncode == 2 and "error: The folder holds no pictures" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "q.onnx").exists()


def test_a_target_no_rollback_meets_says_the_best_reached(studio_home, tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model)
    done = run_studio("quantize", str(model), "-o", str(tmp_path / "q.onnx"), "--calib", str(_calib(tmp_path / "c.npz")),
                      "--min-cosine", "1", home=studio_home)
    assert done.returncode == 2 and "No rollback meets the target" in done.stderr and "best reached" in done.stderr
    assert not (tmp_path / "q.onnx").exists() and not (tmp_path / "q.ranges.json").exists()
