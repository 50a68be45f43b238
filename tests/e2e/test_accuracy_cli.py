"""`studio dump` and `studio compare` as a user runs them."""

from __future__ import annotations

import json

import numpy as np
from accuracy_helpers import chain_model, write_npu_dump
from test_cli import run_studio


def test_dump_fp32_and_fp16_sim_then_compare_json_and_csv(tmp_path, studio_home):
    model = chain_model(tmp_path / "m.onnx", scales=(1.0, 300.0, 300.0, 1.0))
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32))
    done = run_studio("dump", str(model), "-o", str(tmp_path / "a"), "--input", f"x={x}", home=studio_home)
    assert done.returncode == 0, done.stderr
    assert "ONNX Runtime FP32 run" in done.stdout and "input x: given" in done.stdout
    done = run_studio("dump", str(model), "-o", str(tmp_path / "b"), "--input", f"x={x}", "--fp16-sim", home=studio_home)
    assert done.returncode == 0 and "FP16 simulation" in done.stdout
    done = run_studio("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", "-o", str(tmp_path / "r.csv"),
                      home=studio_home)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["target_mode"] == "fp16-sim"
    assert data["findings"][0]["type"] == "fp16_overflow" and data["findings"][0]["name"]
    assert {"name", "op_type", "cosine", "kl_div", "pass"} <= set(data["rows"][1])
    assert (tmp_path / "r.csv").read_text().startswith("Index,OpType,NPUDump")
    human = run_studio("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--check", home=studio_home)
    assert human.returncode == 1 and "[fp16_overflow]" in human.stdout and "advice:" in human.stdout


def test_dump_convert_and_user_errors(tmp_path, studio_home):
    array = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    file = write_npu_dump(tmp_path / "npu", "Relu", "relu1", [], [(array, 2)])
    done = run_studio("dump", "convert", str(file), "-o", str(tmp_path / "out"), "--json", home=studio_home)
    assert done.returncode == 0, done.stderr
    written = json.loads(done.stdout)["written"]
    np.testing.assert_array_equal(np.load(written[0]), array)
    file.write_bytes(file.read_bytes()[:-5])
    bad = run_studio("dump", "convert", str(file), "-o", str(tmp_path / "out2"), home=studio_home)
    assert bad.returncode == 2 and "truncated" in bad.stderr and "Traceback" not in bad.stderr
    missing = run_studio("compare", str(tmp_path / "nope"), str(tmp_path / "npu"), home=studio_home)
    assert missing.returncode == 2 and "Dump not found" in missing.stderr
