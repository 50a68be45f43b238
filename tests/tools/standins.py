"""The stand-in CANN tools (tests/cann_standins) on PATH, as a test "host" would have them."""

from __future__ import annotations

import json
import os
from pathlib import Path

STANDINS = Path(__file__).resolve().parents[1] / "cann_standins"
BIN = STANDINS / "bin"
PY = STANDINS / "py"


def standin_env(tmp_path: Path, fixtures: Path | None = None, **extra: str) -> dict[str, str]:
    """Environment variables that put the stand-ins first on PATH (and ais_bench on PYTHONPATH)."""
    env = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": f"{PY}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "STANDIN_RECORD": str(tmp_path / "standin_record.json"),
           "ASCEND_PROCESS_LOG_PATH": str(tmp_path / "ascend_log")}
    if fixtures is not None:
        env["STANDIN_ASCEND_FIXTURES"] = str(fixtures)
    env.update(extra)
    return env


def use_standins(monkeypatch, tmp_path: Path, fixtures: Path | None = None, **extra: str) -> dict[str, str]:
    """Set :func:`standin_env` in this process (local targets inherit it)."""
    env = standin_env(tmp_path, fixtures, **extra)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def recorded(tmp_path: Path) -> list[dict]:
    """What the stand-ins recorded (the raw times they printed)."""
    path = tmp_path / "standin_record.json"
    return json.loads(path.read_text()) if path.exists() else []


def fake_om(path: Path) -> Path:
    """A file the stand-ins accept as an .om (the IMOD magic; they do not run it)."""
    path.write_bytes(b"IMOD" + bytes(252))
    return path


def make_standin_toolkit(folder: Path, fixtures: Path | None = None, **extra: str) -> Path:
    """A "CANN toolkit" whose set_env.sh puts the stand-ins on PATH, as the real one puts msprof,
    msame and npu-smi there; ``extra`` become exported STANDIN_* settings. Returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    env = standin_env(folder, fixtures, **extra)
    lines = [f"export PATH={_q(str(BIN))}:\"$PATH\"", f"export PYTHONPATH={_q(str(PY))}:\"${{PYTHONPATH:-}}\""]
    lines += [f"export {k}={_q(v)}" for k, v in env.items() if k not in ("PATH", "PYTHONPATH")]
    (folder / "set_env.sh").write_text("\n".join(lines) + "\n")
    return folder


def write_host(studio_home: Path, sshd, toolkit: Path | None = None, name: str = "box", **extra: str) -> str:
    """A host entry for the test sshd in hosts.toml (as `studio ssh add` writes it), its key trusted."""
    import shutil

    config = studio_home / "config"
    config.mkdir(parents=True, exist_ok=True)
    lines = [f"[hosts.{name}]", f'host = "{sshd.host}"', f"port = {sshd.port}", f'user = "{sshd.user}"',
             'auth = "key"', f'key_file = "{sshd.client_key}"']
    if toolkit is not None:
        lines.append(f'toolkit = "{toolkit}"')
    lines += [f'{k} = "{v}"' for k, v in extra.items()]
    (config / "hosts.toml").write_text("\n".join(lines) + "\n")
    shutil.copy(sshd.known_hosts, config / "known_hosts")
    return name


def _q(text: str) -> str:
    import shlex

    return shlex.quote(text)


def facemask_onnx(path: Path) -> Path:
    """The original model of the stand-in app's "facemask.om": conv1 = x * 0.5, relu1 = Relu(conv1),
    x 1x4x8x8 (the app computes the same in FP16 and dumps conv1 and relu1)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    graph = helper.make_graph([helper.make_node("Mul", ["x", "half"], ["c"], name="conv1"),
                               helper.make_node("Relu", ["c"], ["y"], name="relu1")], "facemask",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [half])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path
