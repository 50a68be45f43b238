"""Run the ONNX model an .om was converted from (its ``atc_cmdline`` names it with ``--model=``) in
the .om's place: every input file of a folder, in name order, outputs written as the tool names them.

Started by the stand-in msame and ais_bench with ``$STANDIN_PYTHON`` (an interpreter with numpy and
onnxruntime; the host's python3 has neither):
``standin_twin.py TWIN.onnx INPUT_DIR OUT_DIR msame|ais_bench``. Prints msame's per-file time lines.
"""

import os
import sys
import time

import numpy as np
import onnxruntime as ort

twin, folder, out, tool = sys.argv[1:5]
session = ort.InferenceSession(twin, providers=["CPUExecutionProvider"])
first = session.get_inputs()[0]
dtype = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(uint8)": np.uint8}[first.type]
expected = int(np.prod(first.shape)) * np.dtype(dtype).itemsize
for name in sorted(os.listdir(folder)):
    raw = open(os.path.join(folder, name), "rb").read()
    print(f"[INFO] start to process file:{folder}/{name}", flush=True)
    if len(raw) != expected:
        print(f"[ERROR] input size {len(raw)} does not match the model's input size {expected}, file {name}",
              flush=True)
        print("[ERROR] model execute failed", flush=True)
        sys.exit(1)
    start = time.perf_counter()
    outputs = session.run(None, {first.name: np.frombuffer(raw, dtype).reshape(first.shape)})
    if tool == "msame":  # msame prints each file's time; ais_bench only its summary
        print(f"Inference time: {(time.perf_counter() - start) * 1000:.3f}ms", flush=True)
    stem = os.path.splitext(name)[0]
    for k, value in enumerate(outputs):
        value.tofile(os.path.join(out, f"{stem}_output_{k}.bin" if tool == "msame" else f"{stem}_{k}.bin"))
