"""A connection lost mid-copy outside a deployment: one clear message, exit 2, nothing else on stderr.

``studio convert --atc --host`` uploads the model and downloads the .om; the test's sshd has all
its session processes killed while either file is on its way (seen from outside: the temporary
file grows on disk), as a cable pulled mid-copy would.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from convert_remote_helpers import make_toolkit
from test_cli import studio_command
from test_convert_remote_cli import _host

BIG = 160_000_000  # bytes: a second or more of copying on loopback, so the cut lands mid-way


def _big_model(path: Path) -> None:
    weight = np.random.default_rng(0).standard_normal(BIG // 4, dtype=np.float32).reshape(-1, 1000)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(weight.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(weight.shape))],
        [numpy_helper.from_array(weight, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def _cut_when_growing(server, proc: subprocess.Popen, folder: Path, at: int, timeout: float = 120) -> bool:
    """Kill the sshd's sessions once a temporary copy under ``folder`` holds ``at`` bytes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        for part in folder.rglob("*.studio-part-*"):
            try:
                if part.stat().st_size >= at:
                    server.kill_sessions()
                    return True
            except FileNotFoundError:
                continue
        time.sleep(0.005)
    return False


@pytest.mark.parametrize("direction", ["upload", "download"])
def test_a_cut_mid_copy_is_one_clear_message_and_exit_2(private_sshd, studio_home, tmp_path, direction):
    import os

    model, om = tmp_path / "net.onnx", tmp_path / "big.om"
    if direction == "upload":
        _big_model(model)
        om.write_bytes(b"om")
    else:
        _big_model(model.with_name("unused.onnx"))
        from convert_helpers import conv_bn_model

        onnx.save(conv_bn_model(size=16), model)
        om.write_bytes(os.urandom(BIG))
    deploy = tmp_path / "deploy"
    _host(studio_home, private_sshd, make_toolkit(tmp_path / "cann", om), deploy)
    out = tmp_path / "out" / "net.om"
    out.parent.mkdir()
    env = {**os.environ, "STUDIO_HOME": str(studio_home), "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen([*studio_command(), "convert", str(model), "--atc", "--soc-version", "Ascend310",
                             "--host", "box", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        cut = _cut_when_growing(private_sshd, proc, deploy if direction == "upload" else out.parent, BIG // 4)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert cut, f"the copy was never seen mid-way:\n{stderr}"
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr and "paramiko" not in stderr and "Socket exception" not in stderr, stderr
    assert stderr.count("error:") == 1 and "was lost" in stderr and "again" in stderr, stderr
    assert not out.exists() and not list(out.parent.iterdir())  # no partial .om, no temporary file
