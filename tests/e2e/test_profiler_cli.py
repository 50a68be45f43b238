"""`studio profile stats|compare|run` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def studio(*args: str, home: Path) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "studio"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "studio"]
    env = {**os.environ, "STUDIO_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=120, cwd=REPO)


def test_stats_json_on_the_pytorch_trace(ascend_fixtures, studio_home):
    result = studio("profile", "stats", str(ascend_fixtures / "pytorch_npu" / "trace_view.json"),
                    "--json", "--top", "5", home=studio_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["events"] == 4384 and data["span_us"] > 0 and len(data["by_name"]) == 5
    first = data["by_name"][0]
    assert set(first) == {"name", "count", "total_us", "avg_us", "min_us", "max_us", "share", "self_us"}
    totals = [r["total_us"] for r in data["by_name"]]
    assert totals == sorted(totals, reverse=True)


def test_run_then_compare(tmp_path, studio_home):
    from studio.tools.demo.models import build_classifier
    import onnx

    model = tmp_path / "classifier.onnx"
    onnx.save(build_classifier(), model)
    for name in ("a", "b"):
        result = studio("profile", "run", str(model), "-o", str(tmp_path / name), "--iterations", "3",
                        "--warmup", "1", home=studio_home)
        assert result.returncode == 0, result.stderr
        assert "p99" in result.stdout and "throughput" in result.stdout
    result = studio("profile", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", home=studio_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["ops"] and {"delta_us", "speedup", "delta_pct"} <= set(data["ops"][0])
    text = studio("profile", "stats", str(tmp_path / "a"), home=studio_home)
    ops, _, ranges = text.stdout.partition("run ranges (not in the op statistics):")
    assert "iteration 1" not in ops and "model_run" not in ops  # the run's own ranges are not ops
    assert "model_run ×4" in ranges and "iteration" in ranges


def test_errors_exit_2(tmp_path, studio_home):
    bad = tmp_path / "t.json"
    bad.write_text('[{"ph": "X", "name": "a", "ts": 1')
    result = studio("profile", "stats", str(bad), home=studio_home)
    assert result.returncode == 2 and "error:" in result.stderr and "Traceback" not in result.stderr
