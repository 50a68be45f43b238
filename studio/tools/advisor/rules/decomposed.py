"""Decomposed activations and normalisations: Mish, GELU, LayerNorm spelled out op by op.

* Mish as ``Softplus -> Tanh -> Mul(x, .)``: three element-wise passes over the tensor, Softplus
  (exp + log) the dearest. The automatic fix swaps it for ``LeakyRelu(0.01)`` — one pass, but
  different numbers (marked "changes accuracy", needs an explicit tick, and the loop checks the
  cosine afterwards). The seed case: 23.3 ms -> 14.2 ms.
* GELU as ``Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5`` and LayerNorm as
  ``ReduceMean -> Sub -> Pow -> ReduceMean -> Add -> Sqrt -> Div`` (+ scale and shift): fused kernels
  exist (ONNX ``Gelu`` opset 20, ``LayerNormalization`` opset 17, Ascend's fused ops); re-export
  with them. The gain estimate keeps one pass of the chain's time (an estimate, said so).
"""

from __future__ import annotations

from studio.tools.advisor.model import Finding, severity_for
from studio.tools.advisor.rules._graph import consumers, only_reader

MISH_FIX = "MishToLeakyRelu"


def mish_chains(graph) -> list[tuple[int, int, int]]:
    """(Softplus, Tanh, Mul) node indices of every decomposed Mish."""
    readers = consumers(graph)
    found = []
    for i, node in enumerate(graph.nodes):
        if node.type != "Softplus" or not node.inputs:
            continue
        t = only_reader(graph, readers, node.outputs[0], "Tanh")
        if t is None:
            continue
        m = only_reader(graph, readers, graph.nodes[t].outputs[0], "Mul")
        if m is None or node.inputs[0] not in graph.nodes[m].inputs:
            continue
        found.append((i, t, m))
    return found


def gelu_chains(graph) -> list[list[int]]:
    """Div/Mul -> Erf -> Add -> Mul (-> Mul) chains."""
    readers = consumers(graph)
    producers = graph.producers()
    found = []
    for i, node in enumerate(graph.nodes):
        if node.type != "Erf":
            continue
        pre = producers.get(node.inputs[0])
        add = only_reader(graph, readers, node.outputs[0], "Add")
        if pre is None or graph.nodes[pre].type not in ("Div", "Mul") or add is None:
            continue
        mul = only_reader(graph, readers, graph.nodes[add].outputs[0], "Mul")
        if mul is None:
            continue
        chain = [pre, i, add, mul]
        tail = only_reader(graph, readers, graph.nodes[mul].outputs[0], "Mul")
        if tail is not None:
            chain.append(tail)
        found.append(chain)
    return found


def layernorm_chains(graph) -> list[list[int]]:
    """ReduceMean -> Sub -> Pow|Mul -> ReduceMean -> Add -> Sqrt -> Div chains (by the Sqrt)."""
    producers = graph.producers()
    found = []
    for i, node in enumerate(graph.nodes):
        if node.type != "Sqrt":
            continue
        chain, j = [i], i
        for want in ("Add", "ReduceMean", ("Pow", "Mul"), "Sub"):
            j = producers.get(graph.nodes[j].inputs[0]) if graph.nodes[j].inputs else None
            if j is None or graph.nodes[j].type not in ((want,) if isinstance(want, str) else want):
                break
            chain.append(j)
        else:
            sub = graph.nodes[chain[-1]]
            mean = next((producers[n] for n in sub.inputs if n in producers
                         and graph.nodes[producers[n]].type == "ReduceMean"), None)
            if mean is not None:
                chain.append(mean)
                readers = consumers(graph)
                div = next((k for k in readers.get(node.outputs[0], []) if graph.nodes[k].type == "Div"), None)
                if div is not None:
                    chain.append(div)
                found.append(sorted(chain))
    return found


def _times(ctx, names: list[str]) -> float | None:
    if ctx.ops is None or not ctx.ops.ops:
        return None
    return sum(ctx.op_time_us(n) for n in names) / 1000.0


def check(ctx) -> list[Finding]:
    if ctx.model is None:
        return []
    graph = ctx.model.main
    findings = []
    where = ctx.model_path.name if ctx.model_path else "the model"
    mish = mish_chains(graph)
    if mish:
        names = [graph.nodes[k].name for chain in mish for k in chain]
        cost = _times(ctx, names)
        kept = _times(ctx, [graph.nodes[m].name for _, _, m in mish])  # one element-wise pass remains
        gain = None if cost is None else max(0.0, cost - (kept or 0.0))
        evidence = [f"{len(mish)} Mish chain(s) Softplus -> Tanh -> Mul in {where} (graph): "
                    + ", ".join(graph.nodes[s].name for s, _, _ in mish[:6]) + (" ..." if len(mish) > 6 else "")]
        if cost is not None:
            evidence.append(f"the chains take {cost:.3f} ms per step in {ctx.profile_label}; a LeakyRelu costs "
                            f"about one element-wise pass, estimated from the chains' Mul ({kept or 0:.3f} ms)")
        findings.append(Finding(
            "decomposed-mish", f"Decomposed Mish: {len(mish)} chain(s) of 3 element-wise ops",
            severity_for(gain, ctx.step_ms), "activation", evidence,
            "Swap Mish for LeakyRelu(alpha=0.01) (one pass instead of three; changes the numbers: retrain or "
            "fine-tune if the accuracy check fails), or keep Mish as one fused op where the runtime has one.",
            gain, cost, names, fix=MISH_FIX, changes_accuracy=True,
            gain_method="the chains' profiled time minus one element-wise pass (their Mul)"))
    for rule_id, label, chains, fused in (("decomposed-gelu", "GELU", gelu_chains(graph), "Gelu (opset 20)"),
                                          ("decomposed-layernorm", "LayerNorm", layernorm_chains(graph),
                                           "LayerNormalization (opset 17)")):
        if not chains:
            continue
        names = [graph.nodes[k].name for chain in chains for k in chain]
        cost = _times(ctx, names)
        per_pass = None if cost is None else cost / max(1, len(names))
        gain = None if cost is None else max(0.0, cost - per_pass * len(chains))
        evidence = [f"{len(chains)} decomposed {label} chain(s) of {len(chains[0])} ops in {where} (graph)"]
        if cost is not None:
            evidence.append(f"they take {cost:.3f} ms per step in {ctx.profile_label}; gain estimated as all but "
                            "one op's average time per chain (estimate)")
        findings.append(Finding(
            rule_id, f"Decomposed {label}: {len(chains)} chain(s)", severity_for(gain, ctx.step_ms), "activation",
            evidence, f"Export the model with the fused {fused} operator (or let ATC fuse it) so one kernel "
            "replaces the chain.", gain, cost, names,
            gain_method="the chains' profiled time minus one op's average time per chain"))
    return findings
