"""Stand-in for a user's AscendCL app (the face-mask sample): reads ./acl.json as aclInit does,
"runs" the model a few times and, when acl.json asks for a dump, writes real NPU dump files
(tests/tools/accuracy_helpers.write_npu_dump) under {dump_path}/{time}/{device}/{model}/{id}/{index}/.

Run with the test interpreter (it needs numpy): ``python acl_app.py --model m.om [--frames N]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


@functools.cache
def _dump_writer():
    """The tests' NPU dump writer (tests/tools/accuracy_helpers.py), loaded by its path: the app runs
    in a host's shell, where the tests' folders are not on the import path."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "tools" / "accuracy_helpers.py"
    spec = importlib.util.spec_from_file_location("accuracy_helpers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_npu_dump


def main() -> int:
    parser = argparse.ArgumentParser(prog="acl_app")
    parser.add_argument("--model", required=True)
    parser.add_argument("--frames", type=int, default=2)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--input", help="the input array (.npy); random when absent")
    args = parser.parse_args()
    print("[INFO] acl init success", flush=True)
    dump = None
    if os.path.exists("acl.json"):
        with open("acl.json", encoding="utf-8") as handle:
            dump = json.load(handle).get("dump")
    if dump is not None and not os.path.isdir(dump["dump_path"]):
        print(f"[ERROR] dump path {dump['dump_path']} does not exist", flush=True)
        return 1
    if not os.path.isfile(args.model):
        print(f"[ERROR] load model from file failed, model file is {args.model}", flush=True)
        return 1
    print(f"[INFO] load model {args.model} success", flush=True)
    stamp = time.strftime("%Y%m%d%H%M%S")
    rng = np.random.default_rng(0)
    for frame in range(args.frames):
        time.sleep(args.sleep)
        x = np.load(args.input).astype(np.float32) if args.input else \
            rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
        conv = (x * np.float32(0.5)).astype(np.float16).astype(np.float32)  # the NPU computes in FP16
        relu = np.maximum(conv, 0)
        print(f"[INFO] frame {frame}: 2 faces, 1 mask", flush=True)
        if dump is None:
            continue
        for entry in dump.get("dump_list") or [{}]:
            name = entry.get("model_name") or Path(args.model).stem
            folder = Path(dump["dump_path"]) / stamp / "0" / name / "1" / str(frame)
            layers = set(entry.get("layer") or [])
            if not layers or "conv1" in layers:
                _dump_writer()(folder, "Conv2D", "conv1", [(x, 0)], [(conv, 0)], task=1)
            if not layers or "relu1" in layers:
                _dump_writer()(folder, "Relu", "relu1", [(conv, 0)], [(relu, 0)], task=2)
    print("[INFO] end to finalize acl", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
