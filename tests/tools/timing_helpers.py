"""Models the timing-judgment tests generate (onnx.helper, fixed seeds), and what they read back."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np


def tiny_chain(path: Path, ops: int = 80, width: int = 16) -> Path:
    """A sub-millisecond model: ``ops`` element-wise nodes (Add, Mul, Relu in turn) on a 1 x width
    tensor, where ONNX Runtime's profiler costs far more than the ops."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    nodes, inits, x = [], [], "x"
    for i in range(ops):
        kind = ("Add", "Mul", "Relu")[i % 3]
        if kind == "Relu":
            nodes.append(helper.make_node("Relu", [x], [f"t{i}"], name=f"relu{i}"))
        else:
            inits.append(numpy_helper.from_array(rng.uniform(0.9, 1.1, width).astype(np.float32), f"c{i}"))
            nodes.append(helper.make_node(kind, [x, f"c{i}"], [f"t{i}"], name=f"{kind.lower()}{i}"))
        x = f"t{i}"
    nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    graph = helper.make_graph(nodes, "tiny_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), str(path))
    return path


def if_model(path: Path, size: int = 192, layers: int = 6) -> Path:
    """Most of the work inside an If: when sum(x) > 0 the then-branch runs ``layers`` MatMul + Relu
    pairs (their kernels run inside the If's own slice), else an Identity."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array((rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32), f"w{i}")
             for i in range(layers)]
    body, h = [], "x"
    for i in range(layers):
        body.append(helper.make_node("MatMul", [h, f"w{i}"], [f"m{i}"], name=f"body/matmul{i}"))
        body.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"body/relu{i}"))
        h = f"r{i}"
    body.append(helper.make_node("Identity", [h], ["then_out"], name="body/out"))
    then_graph = helper.make_graph(body, "then", [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT,
                                                                                     [1, size])])
    else_graph = helper.make_graph([helper.make_node("Identity", ["x"], ["else_out"], name="else/out")], "else", [],
                                   [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [1, size])])
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["cond"], name="positive"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_graph, else_branch=else_graph)]
    graph = helper.make_graph(nodes, "if_model", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])], inits + [zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def positive_input(path: Path, size: int = 192) -> Path:
    """An .npy input whose sum is positive, so :func:`if_model` takes its then-branch."""
    np.save(path, np.random.default_rng(0).uniform(0.0, 1.0, (1, size)).astype(np.float32))
    return path


def measured_kernels(folder: Path) -> list[dict]:
    """ONNX Runtime's own kernel events of a local run's measured iterations (its last
    ``iterations`` model_run slices), read from onnxruntime_profile.json."""
    events = json.loads((Path(folder) / "onnxruntime_profile.json").read_text())
    its = json.loads((Path(folder) / "studio_profile.json").read_text())["iterations"]
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])[-its:]
    lo, hi = runs[0]["ts"], runs[-1]["ts"] + runs[-1]["dur"]
    return [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and lo <= e["ts"] < hi]


def self_times_by_hand(kernels: list[dict]) -> list[float]:
    """Each kernel's duration minus the kernels inside it on the same thread that are inside no
    other kernel inside it (its direct children): for each kernel, a plain look at those that
    start within it."""
    import bisect

    order = sorted(range(len(kernels)), key=lambda i: (kernels[i]["ts"], -kernels[i]["dur"]))
    starts = [kernels[i]["ts"] for i in order]
    out = []
    for k in kernels:
        k_end = k["ts"] + k["dur"]
        lo, hi = bisect.bisect_left(starts, k["ts"]), bisect.bisect_right(starts, k_end)
        inside = [kernels[order[j]] for j in range(lo, hi)]
        inside = [c for c in inside if c is not k and c["tid"] == k["tid"] and c["ts"] + c["dur"] <= k_end
                  and c["dur"] < k["dur"]]
        direct = [c for c in inside if not any(o is not c and o["ts"] <= c["ts"] and c["ts"] + c["dur"] <= o["ts"] + o["dur"]
                                               and o["dur"] > c["dur"] for o in inside)]
        out.append(k["dur"] - sum(c["dur"] for c in direct))
    return out


def op_self_time_per_run(folder: Path) -> dict[str, float]:
    """Each op's self time per measured run (us), from ONNX Runtime's own kernel events, by hand:
    :func:`self_times_by_hand`, stalls counted as the op's median (:func:`robust_sum`)."""
    kernels = measured_kernels(folder)
    runs = json.loads((Path(folder) / "studio_profile.json").read_text())["iterations"]
    per_op: dict[str, list[float]] = {}
    for k, own in zip(kernels, self_times_by_hand(kernels)):
        per_op.setdefault(k["name"][:-len("_kernel_time")], []).append(own)
    return {name: robust_sum(v) / runs for name, v in per_op.items()}


def self_time_by_type(folder: Path, by_name: list[dict]) -> tuple[dict[str, float], dict[str, float]]:
    """Per op type, from ONNX Runtime's own kernel events of the measured runs: the self time by
    hand (us), and the summed ``share`` of the ``by_name`` rows (``profile stats --json``) of that
    type, in percent."""
    kernels = measured_kernels(folder)
    own: dict[str, float] = {}
    for k, t in zip(kernels, self_times_by_hand(kernels)):
        own[k["args"]["op_name"]] = own.get(k["args"]["op_name"], 0.0) + t
    types = {k["name"][:-len("_kernel_time")]: k["args"]["op_name"] for k in kernels}
    shares: dict[str, float] = {}
    for row in by_name:
        shares[types[row["name"]]] = shares.get(types[row["name"]], 0.0) + row["share"] * 100
    return own, shares


def robust_sum(runs: list[float]) -> float:
    """The runs' sum with each run at least 5x their median and 50 us above it counted as the
    median (the advisor's rule for a stall, written out)."""
    med = float(np.median(runs))
    return sum(med if r >= 5 * med and r - med >= 50 else r for r in runs)


def stalled_copy(folder: Path, dest: Path, op: str, stall_us: float) -> Path:
    """A copy of a local run's folder whose op_summary.csv has the first run of ``op`` (and every
    kernel around it, an If) ``stall_us`` longer and every later kernel starting that much later,
    as when the machine stalls mid-run; the copy names the same model."""
    shutil.copytree(folder, dest)
    summary = json.loads((folder / "studio_profile.json").read_text())
    summary["model"] = str((folder / summary["model"]).resolve())  # the copy names the same model
    (dest / "studio_profile.json").write_text(json.dumps(summary))
    rows = read_csv(folder / "op_summary.csv")
    at = next(i for i, r in enumerate(rows) if r["Op Name"] == op)
    start = float(rows[at]["Task Start Time(us)"])
    end = start + float(rows[at]["Task Duration(us)"])
    for i, r in enumerate(rows):
        r_start = float(r["Task Start Time(us)"])
        if i == at or (r_start <= start and r_start + float(r["Task Duration(us)"]) >= end):  # it, and the If around it
            r["Task Duration(us)"] = str(float(r["Task Duration(us)"]) + stall_us)
        elif r_start > start:
            r["Task Start Time(us)"] = f"{r_start + stall_us:.3f}\t"
    with (dest / "op_summary.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return dest


def read_csv(path: Path) -> list[dict]:
    with Path(path).open(newline="") as handle:
        return list(csv.DictReader(handle))
