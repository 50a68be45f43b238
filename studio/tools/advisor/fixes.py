"""Automatic fixes: what each fix does, and applying a ticked set to an ONNX model.

Exact fixes are the converter's own fusion passes (``studio.tools.convert.passes``), run through
the converter's job so the result is shape-checked, validated as ONNX and written atomically,
with its conversion report beside it. The one op swap, Mish -> LeakyRelu, changes the model's
numbers: it runs only when ticked *and* ``allow_accuracy_change`` is given.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.errors import UserError
from studio.jobs import CancelToken, Progress

MISH_TO_LEAKY_RELU = "MishToLeakyRelu"
LEAKY_ALPHA = 0.01


@dataclass(frozen=True)
class Fix:
    """One automatic fix: its name (a converter pass name for exact ones) and what it does."""

    name: str
    description: str
    changes_accuracy: bool = False


FIXES = {f.name: f for f in (
    Fix("ConvBnFusion", "fold BatchNormalization into the Conv before it"),
    Fix("ConvAddFusion", "fold a per-channel constant Add into the Conv bias"),
    Fix("ConvMulFusion", "fold a per-channel constant Mul into the Conv weights"),
    Fix("MatMulAddFusion", "MatMul + bias Add -> Gemm"),
    Fix(MISH_TO_LEAKY_RELU, f"replace Softplus -> Tanh -> Mul (Mish) by LeakyRelu(alpha={LEAKY_ALPHA})",
        changes_accuracy=True),
)}


@dataclass
class Applied:
    """What :func:`apply_fixes` did."""

    output: Path
    fixes: list[str]
    fusions: list[dict] = field(default_factory=list)
    swapped: list[str] = field(default_factory=list)  # Mish chains replaced (by their Mul node)
    nodes_before: int = 0
    nodes_after: int = 0
    convert_report: str | None = None

    def to_json(self) -> dict:
        return {"output": str(self.output), "fixes": self.fixes, "fusions": self.fusions, "swapped": self.swapped,
                "nodes_before": self.nodes_before, "nodes_after": self.nodes_after,
                "convert_report": self.convert_report}


def apply_fixes(model: Path, output: Path, fixes: list[str], allow_accuracy_change: bool = False,
                cancel: CancelToken | None = None, input_shape: str | None = None) -> Generator[Progress, None, Applied]:
    """Job: write ``output`` = ``model`` with ``fixes`` applied (converter passes, then swaps).

    ``input_shape`` (``name:d1,d2;...``) sizes dynamic inputs: the converter works on fixed shapes.
    """
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions
    from studio.tools.convert.passes import PASS_NAMES

    model, output = Path(model), Path(output)
    unknown = [f for f in fixes if f not in FIXES]
    if unknown:
        raise UserError(f"Unknown fix(es): {', '.join(unknown)}", "--fix", "Fixes: " + ", ".join(FIXES))
    risky = [f for f in fixes if FIXES[f].changes_accuracy]
    if risky and not allow_accuracy_change:
        raise UserError(f"{', '.join(risky)} changes the model's numbers", "--fix",
                        "Tick it explicitly: add --allow-accuracy-change (the loop then checks the cosine).")
    if output.resolve() == model.resolve():
        raise UserError("The fixed model would overwrite the original", output, "Give another -o path.")
    # Cleanups that never change numbers stay on; fusion passes run only when ticked.
    switches = {name: (name in fixes) for name in PASS_NAMES if name.endswith("Fusion")}
    yield Progress(0.05, "applying fusions with the converter")
    report = yield from convert_model(ConvertOptions(model=model, output=output, fusions=switches,
                                                                input_shape=input_shape), cancel)
    applied = Applied(output, list(fixes), report.fusions, [], report.nodes_before, report.nodes_after,
                      report.report_path)
    if MISH_TO_LEAKY_RELU in fixes:
        yield Progress(0.8, "replacing Mish by LeakyRelu")
        applied.swapped = swap_mish(output)
        import onnx

        applied.nodes_after = len(onnx.load(str(output), load_external_data=False).graph.node)
    yield Progress(1.0, f"wrote {output.name}")
    return applied


def swap_mish(path: Path) -> list[str]:
    """Replace every Softplus -> Tanh -> Mul(x, .) chain in the ONNX file at ``path`` by one
    LeakyRelu writing the Mul's output tensor (so the rest of the graph and the output names stay);
    rewrites the file atomically. Returns the new nodes' names."""
    import onnx
    from onnx import helper

    m = onnx.load(str(path))
    g = m.graph
    readers: dict[str, list[int]] = {}
    for i, n in enumerate(g.node):
        for name in n.input:
            readers.setdefault(name, []).append(i)
    outputs = {o.name for o in g.output}

    def only(value: str, op: str) -> int | None:
        found = readers.get(value, [])
        return found[0] if len(found) == 1 and value not in outputs and g.node[found[0]].op_type == op else None

    drop, replace, names = set(), {}, []
    for i, n in enumerate(g.node):
        if n.op_type != "Softplus":
            continue
        t = only(n.output[0], "Tanh")
        mul = only(g.node[t].output[0], "Mul") if t is not None else None
        if mul is None or n.input[0] not in g.node[mul].input:
            continue
        name = g.node[mul].name or f"{n.name}_leakyrelu"
        replace[mul] = helper.make_node("LeakyRelu", [n.input[0]], [g.node[mul].output[0]], name=name,
                                        alpha=LEAKY_ALPHA)
        drop |= {i, t}
        names.append(name)
    if not replace:
        return []
    nodes = [replace.get(i, n) for i, n in enumerate(g.node) if i not in drop]
    del g.node[:]
    g.node.extend(nodes)
    onnx.checker.check_model(m)
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    onnx.save(m, str(tmp))
    tmp.replace(path)
    return names


def fixes_for(findings) -> list[str]:
    """The automatic fixes the findings offer (each once, in finding order)."""
    out = []
    for f in findings:
        if f.fix and f.fix in FIXES and f.fix not in out:
            out.append(f.fix)
    return out
