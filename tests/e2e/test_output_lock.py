"""Two runs given the same output folder: the second is refused while the first writes there
(they used to both finish and leave one folder holding a mix of the two)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from test_cli import REPO, studio_command


def _slow_model(path) -> None:
    """Eight 256x1024 @ 1024x1024 MatMuls: a run takes a good fraction of a second, so a profile of a
    few dozen iterations lasts seconds while its trace stays small (the old test profiled a tiny
    classifier 4,000 times, and reading that trace took most of its 100 s)."""
    rng = np.random.default_rng(0)
    nodes, inits, last = [], [], "x"
    for i in range(8):
        inits.append(numpy_helper.from_array((rng.standard_normal((1024, 1024)) * 0.03).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [last, f"w{i}"], [f"h{i}"], name=f"mm{i}"))
        last = f"h{i}"
    graph = helper.make_graph(nodes, "slow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 1024])],
                              [helper.make_tensor_value_info(last, TensorProto.FLOAT, [256, 1024])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))


ITERATIONS = "100"  # seconds of profiling: the second run starts and is refused well inside them


def test_a_second_profile_into_the_same_folder_is_refused_while_the_first_runs(studio_home, tmp_path):
    model = tmp_path / "slow.onnx"
    _slow_model(model)
    out = tmp_path / "prof"
    env = {**os.environ, "STUDIO_HOME": str(studio_home), "QT_QPA_PLATFORM": "offscreen"}
    first = subprocess.Popen([*studio_command(), "profile", "run", str(model), "-o", str(out), "--iterations", ITERATIONS,
                              "--warmup", "1", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("ort_*.json")) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the first run's session is made: it is measuring now
        assert first.poll() is None, first.communicate()
        second = subprocess.run([*studio_command(), "profile", "run", str(model), "-o", str(out), "--iterations", "3",
                                 "--warmup", "0"], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
        stdout, stderr = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, stderr
    assert second.returncode == 2, (second.stdout, second.stderr)
    assert "Another Studio profile is writing" in second.stderr and "Traceback" not in second.stderr
    saved = json.loads((out / "studio_profile.json").read_text())
    assert len(saved["latencies_ms"]) == int(ITERATIONS)  # only the first run's results are there
    assert not list(tmp_path.glob(".prof.studio-lock"))  # the lock went with the run


def test_the_lock_goes_with_its_process(tmp_path):
    from studio.core.errors import UserError
    from studio.core.output_lock import lock_path, output_lock

    folder = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                               "from studio.core.output_lock import output_lock\n"
                               "with output_lock(__import__('pathlib').Path(sys.argv[1])):\n"
                               "    print('held', flush=True); time.sleep(60)", str(folder)],
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    try:
        assert holder.stdout.readline().strip() == "held"
        try:
            with output_lock(folder):
                raise AssertionError("taken while another process holds it")
        except UserError as exc:
            assert f"pid {holder.pid}" in str(exc)
    finally:
        holder.kill()  # killed, not finished: the kernel lets go of the lock
        holder.wait()
    with output_lock(folder):
        assert lock_path(folder).exists()
    assert not lock_path(folder).exists()
