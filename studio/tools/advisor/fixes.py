"""Automatic fixes: what each fix does, and applying a ticked set to an ONNX model.

Exact fixes are the converter's own fusion passes (``studio.tools.convert.passes``), run through
the converter's job so the result is shape-checked, validated as ONNX and written atomically,
with its conversion report beside it. The one op swap, Mish -> LeakyRelu, changes the model's
numbers: it runs only when ticked *and* ``allow_accuracy_change`` is given.

The converter's clean-ups (lifting constants, identity elimination, constant folding) run with
any fix; :class:`Applied` lists every pass that changed the model with its count and the file
size before and after, and warns when the model grew (constant folding can store weights a file
used to compute at load: 80 KB -> 102 MB on a "light" ResNet-50).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json

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
    """What :func:`apply_fixes` did: the fixes asked for, every pass that changed the model
    (``passes``: name -> rewrites, the asked-for fixes and the clean-ups that ran with them), the
    file sizes before and after, and warnings (a model that grew)."""

    output: Path
    fixes: list[str]
    fusions: list[dict] = field(default_factory=list)
    swapped: list[str] = field(default_factory=list)  # Mish chains replaced (by their Mul node)
    nodes_before: int = 0
    nodes_after: int = 0
    convert_report: str | None = None
    passes: dict[str, int] = field(default_factory=dict)
    pass_runs: list[dict] = field(default_factory=list)  # the converter's per-pass runs (sizes around each)
    size_before: int = 0
    size_after: int = 0
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line: what was asked, what else ran, and the size change."""
        return describe_applied(to_json(self))


def describe_applied(applied: dict) -> str:
    """One line from an :class:`Applied` in JSON (also of a saved report): the fixes asked for with their
    counts, every other pass that changed the model, nodes and file size before and after."""
    from studio.core.units import human_size

    passes = applied.get("passes") or {}
    fixes = applied.get("fixes") or []
    asked = ", ".join(f"{f} x{len(applied.get('swapped') or []) if f == MISH_TO_LEAKY_RELU else passes.get(f, 0)}"
                      for f in fixes) or "nothing"
    others = ", ".join(f"{k} x{v}" for k, v in passes.items() if k not in fixes and v)
    text = f"applied {asked}" + (f"; also ran {others}" if others else "")
    text += f"; nodes {applied.get('nodes_before')} -> {applied.get('nodes_after')}"
    before, after = applied.get("size_before"), applied.get("size_after")
    if before and after:
        text += f"; size {human_size(before, decimal=True)} -> {human_size(after, decimal=True)}"
        if abs(after / before - 1.0) >= 0.05:
            text += f" (x{after / before:,.1f})"
    return text


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
    applied.pass_runs = report.pass_runs
    applied.passes = {r["pass"]: r["applied"] for r in report.pass_runs if r["applied"]}
    if MISH_TO_LEAKY_RELU in fixes:
        yield Progress(0.8, "replacing Mish by LeakyRelu")
        applied.swapped = swap_mish(output)
        import onnx

        applied.nodes_after = len(onnx.load(str(output), load_external_data=False).graph.node)
    applied.size_before, applied.size_after = _file_size(model), _file_size(output)
    from studio.tools.convert.rewrite import PassRun, growth_warning

    runs = [PassRun(r["pass"], r["applied"], r["seconds"], r["bytes_before"], r["bytes_after"]) for r in report.pass_runs]
    grown = growth_warning(applied.size_before, applied.size_after, runs)
    applied.warnings = [grown] if grown else []
    yield Progress(1.0, f"wrote {output.name}")
    return applied


def _file_size(path: Path) -> int:
    """Bytes of an ONNX file plus its external data file, when it has one beside it."""
    data = Path(str(path) + ".data")
    return Path(path).stat().st_size + (data.stat().st_size if data.is_file() else 0)


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
