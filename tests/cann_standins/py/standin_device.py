"""Stand-in for an FP16 Ascend device behind ATC: ``atc`` (``python3 -m standin_device atc ...``)
"compiles" an ONNX model into an .om (the IMOD magic, the ONNX and the ``--keep_dtype`` list
beside it); ``dump`` runs it as a device computing in FP16 would (Studio's FP16 simulation with
the kept ops in FP32: every op's output rounded through FP16) and writes one real NPU dump file
per op (tests/tools/accuracy_helpers.write_npu_dump) under acl.json's dump_path, FP16 tensors for
FP16 ops. Needs the test interpreter (numpy, onnx, onnxruntime, studio on the path).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

OM_MAGIC = b"IMOD"


@functools.cache
def _dump_writer():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "tools" / "accuracy_helpers.py"
    spec = importlib.util.spec_from_file_location("accuracy_helpers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_npu_dump


def atc(argv: list[str]) -> int:
    options = dict(arg[2:].split("=", 1) for arg in argv if arg.startswith("--") and "=" in arg)
    if os.environ.get("STANDIN_ATC_ARGS"):
        with open(os.environ["STANDIN_ATC_ARGS"], "a") as record:
            print(" ".join(argv), file=record)
    if not options.get("soc_version"):
        print("ATC run failed, Please check the detail log\nE10007: [--soc_version] is required.")
        return 1
    model, output = Path(options.get("model", "")), options.get("output", "")
    if not model.is_file():
        print(f"ATC run failed, Please check the detail log\nE10410: Failed to open file [{model}].")
        return 1
    print("ATC start working now, please wait for a moment.")
    Path(output + ".om").write_bytes(OM_MAGIC + bytes(252))
    shutil.copy(model, output + ".om.onnx")
    keep = Path(options["keep_dtype"]).read_text().split() if options.get("keep_dtype") else []
    Path(output + ".om.keep").write_text("\n".join(keep))
    print("ATC run success, welcome to the next use.")
    return 0


def dump(om: str, inputs: str, acl_json: str) -> int:
    """Run the "OM" on the inputs and dump every op as acl.json asks."""
    import onnx
    import onnxruntime as ort

    from studio.tools.accuracy.fp16_sim import simulate_fp16

    config = json.loads(Path(acl_json).read_text())["dump"]
    if not os.path.isdir(config["dump_path"]):
        print(f"[ERROR] dump path {config['dump_path']} does not exist")
        return 1
    model = onnx.load(om + ".onnx")
    keep = set(Path(om + ".keep").read_text().split())
    weights = {i.name for i in model.graph.initializer}
    declared = [v for v in model.graph.input if v.name not in weights]
    feeds = {}
    for value, file in zip(declared, inputs.split(",")):
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = np.fromfile(file, dtype=np.float32).reshape(shape)
    sim = simulate_fp16(model, keep)[0]
    names = [o for n in model.graph.node for o in n.output if o]
    have = {o.name for o in sim.graph.output}
    sim.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names if n not in have)
    session = ort.InferenceSession(sim.SerializeToString(), providers=["CPUExecutionProvider"])
    wanted = [o.name for o in session.get_outputs()]
    with np.errstate(all="ignore"):
        tensors = dict(zip(wanted, session.run(wanted, feeds)))
    folder = Path(config["dump_path"]) / time.strftime("%Y%m%d%H%M%S") / "0" / "model" / "1" / "0"
    for task, node in enumerate(model.graph.node, 1):
        outs = []
        for name in node.output:
            array = tensors[name]
            if array.dtype == np.float32 and node.name not in keep:
                with np.errstate(over="ignore"):
                    array = array.astype(np.float16)  # the device's FP16 op writes FP16
            outs.append((array, 2))  # ND
        _dump_writer()(folder, node.op_type, node.name, [], outs, timestamp=1700000000000000 + task, task=task)
    print(f"[INFO] dumped {len(model.graph.node)} ops into {folder}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["atc"]:
        sys.exit(atc(sys.argv[2:]))
    sys.exit(dump(*sys.argv[1:4]))
