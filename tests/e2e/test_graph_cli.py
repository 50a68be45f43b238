"""`studio graph summary|export` run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def studio(*args: str, home: Path) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "studio"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "studio"]
    env = {**os.environ, "STUDIO_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=120, cwd=REPO)


def test_summary_json_on_real_om(ascend_fixtures, studio_home):
    result = studio("graph", "summary", str(ascend_fixtures / "om" / "dynamic_and_static_graph_without_unfold.om"),
                    "--json", home=studio_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for key in ("format", "nodes", "nodes_total", "edges", "op_types", "inputs", "outputs", "parameters", "subgraphs"):
        assert key in data
    assert data["format"] == "om" and data["nodes"] == 6 and data["nodes_total"] == 18
    assert data["inputs"][0] == {"name": "data_1:0", "shape": [2, 2], "dtype": "float32", "format": "NCHW"}


def test_summary_text_and_export(tmp_path, studio_home):
    sys.path.insert(0, str(REPO))
    from studio.tools.graph.synthetic import write_synthetic

    model = write_synthetic(tmp_path / "m.onnx", 400)
    text = studio("graph", "summary", str(model), home=studio_home)
    assert text.returncode == 0 and "onnx model" in text.stdout and "Conv" in text.stdout
    svg = tmp_path / "m.svg"
    out = studio("graph", "export", str(model), "-o", str(svg), "--expand-all", home=studio_home)
    assert out.returncode == 0, out.stderr
    assert svg.read_text().startswith("<svg") and svg.read_text().count("<g class=\"node\">") > 400
    png = tmp_path / "m.png"
    out = studio("graph", "export", str(model), "-o", str(png), home=studio_home)
    assert out.returncode == 0, out.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    macs = studio("graph", "macs", str(model), "--json", "-o", str(tmp_path / "nd.json"), home=studio_home)
    assert macs.returncode == 0, macs.stderr
    top = json.loads(macs.stdout)["top"]
    assert top and top[0]["macs"] >= top[-1]["macs"]
    assert json.loads((tmp_path / "nd.json").read_text())["results"]


def test_errors_exit_2(ascend_fixtures, studio_home, tmp_path):
    result = studio("graph", "summary", str(ascend_fixtures / "om" / "not_an_om.om"), home=studio_home)
    assert result.returncode == 2 and "IMOD" in result.stderr and "Traceback" not in result.stderr
    bad = tmp_path / "x.gif"
    result = studio("graph", "export", str(ascend_fixtures / "om" / "root_model.om"), "-o", str(bad), home=studio_home)
    assert result.returncode == 2 and "FILE.svg" in result.stderr
