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


def om_with_twin(path: Path, twin: Path) -> Path:
    """An OM file (header, partition table, MODEL_DEF) describing ``twin``'s first input and its
    outputs as ATC would (a Data op, the model, a NetOutput), its ``atc_cmdline`` naming ``twin``
    as ``--model=``: the stand-in msame and ais_bench run that ONNX model in its place, so
    their outputs are the real model's."""
    import struct

    import onnx

    from studio.tools.graph import ge_proto
    from studio.tools.graph.om_format import HEADER
    from studio.tools.graph.om_reader import DTYPES

    codes = {name: code for code, name in DTYPES.items()}
    model = onnx.load(str(twin), load_external_data=False)
    np_name = {onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.FLOAT16: "float16",
               onnx.TensorProto.UINT8: "uint8", onnx.TensorProto.INT64: "int64", onnx.TensorProto.INT32: "int32"}

    def describe(desc, value) -> None:
        kind = value.type.tensor_type
        desc.dtype = codes[np_name[kind.elem_type]]
        desc.shape.dim.extend(d.dim_value for d in kind.shape.dim)
        desc.layout = b"NCHW"

    model_def = ge_proto.ModelDef()
    model_def.name = twin.stem.encode()
    entry = model_def.attr.add()
    entry.key = b"atc_cmdline"
    entry.value.s = f"atc --model={twin} --framework=5 --output={path.with_suffix('')} --soc_version=Ascend310".encode()
    graph = model_def.graph.add()
    graph.name = twin.stem.encode()
    first = model.graph.input[0]
    data = graph.op.add()
    data.name, data.type = first.name.encode(), b"Data"
    describe(data.output_desc.add(), first)
    body = graph.op.add()
    body.name, body.type = b"model", b"PartitionedCall"
    body.input.append(f"{first.name}:0".encode())
    for value in model.graph.output:
        describe(body.output_desc.add(), value)
    out = graph.op.add()
    out.name, out.type = b"Node_Output", b"NetOutput"
    out.input.extend(f"model:{k}".encode() for k in range(len(model.graph.output)))
    blob = model_def.SerializeToString()
    table = struct.pack("<I", 1) + struct.pack("<III", 0, 0, len(blob))
    header = HEADER.pack(b"IMOD", 256, 0x10000000, bytes(64), len(table) + len(blob), 0, 0, 0, 0,
                         twin.stem.encode()[:31], 3, bytes(32), 0, 1, b"", 0, bytes(3), 0, 0, 0, bytes(62))
    path.write_bytes(header + table + blob)
    return path
