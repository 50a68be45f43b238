"""Compare two dumps op by op: rows of metrics, the advisor's findings, a result object.

``CompareResult`` prints its table, is truthy when every compared row passes (Polygraphy's
habit), and converts to JSON and to a CSV with msaccucmp's columns (see :mod:`.report_csv`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.jobs import CancelToken, Progress
from studio.serial import json_float, to_json
from studio.tools.accuracy.advisor import Finding, advise
from studio.tools.accuracy.dumpset import MODE_LABELS, DumpSet, TensorEntry, load_dump
from studio.tools.accuracy.matching import Pair, match
from studio.tools.accuracy.metrics import METRIC_NAMES, Metrics, Thresholds, compare_arrays


@dataclass
class Row:
    """One line of the comparison: a matched pair with its metrics, or a one-side-only tensor.

    ``golden_file`` / ``target_file`` are absolute locators, so a row can be drilled into later
    (also after reading the CSV back).
    """

    index: int
    name: str
    op_type: str
    golden: TensorEntry | None
    target: TensorEntry | None
    how: str
    note: str = ""
    metrics: Metrics | None = None
    violations: list[str] = field(default_factory=list)
    is_input: bool = False
    is_output: bool = False
    golden_file: str = ""
    target_file: str = ""
    underflow: dict | None = None  # the FP16 underflow this op blew up on (see .underflow), if any

    @property
    def status(self) -> str:
        """``pass``, ``fail``, or how a one-side-only row came to be (``golden only``, ``fused``...)."""
        if self.metrics is None:
            return self.how
        if self.metrics.empty:
            return "empty"
        return "fail" if self.violations else "pass"

    @property
    def passed(self) -> bool | None:
        """True / False for compared rows, None for one-side-only rows and empty tensors."""
        return None if self.metrics is None or self.metrics.empty else not self.violations

    def __json__(self) -> dict:
        """The JSON row (:func:`studio.serial.to_json`): name, op_type, every metric, pass (plus
        shapes, dtypes, status)."""
        m = self.metrics
        data = {"index": self.index, "name": self.name, "op_type": self.op_type,
                "golden": self.golden.label if self.golden else None,
                "target": self.target.label if self.target else None,
                "golden_shape": list(self.golden.shape) if self.golden else None,
                "target_shape": list(self.target.shape) if self.target else None,
                "golden_dtype": self.golden.dtype if self.golden else None,
                "target_dtype": self.target.dtype if self.target else None,
                "status": self.status, "matched_by": self.how, "note": self.note}
        for name in METRIC_NAMES:
            data[name] = json_float(getattr(m, name)) if m else None
        for name in ("golden_mean", "golden_std", "target_mean", "target_std"):
            data[name] = json_float(getattr(m, name)) if m else None
        for name in ("target_nonfinite", "golden_nonfinite", "target_only_nonfinite", "finite_pairs"):
            data[name] = getattr(m, name) if m else None
        data["violations"] = list(self.violations)
        data["underflow"] = self.underflow
        data["reason"] = m.reason if m else ""
        data["pass"] = self.passed
        return data


@dataclass
class CompareResult:
    """All rows and findings of one comparison. ``bool(result)``: every compared row passes."""

    rows: list[Row]
    findings: list[Finding]
    golden: str
    target: str
    golden_mode: str = ""
    target_mode: str = ""
    thresholds: Thresholds = field(default_factory=Thresholds)
    model: str | None = None          # the target's model, when its dump records one
    golden_model: str | None = None   # the golden side's model

    def __bool__(self) -> bool:
        return all(r.passed is not False for r in self.rows)

    uncovered: dict = field(default_factory=dict)  # what the dumps could not show (see Coverage)

    @property
    def compared(self) -> list[Row]:
        """Rows with metrics (both sides present and holding data)."""
        return [r for r in self.rows if r.metrics is not None and not r.metrics.empty]

    def summary(self) -> str:
        """One line: how many rows compared / passed / failed / empty / one-side-only / not dumped."""
        compared = self.compared
        failed = sum(1 for r in compared if r.violations)
        empty = sum(1 for r in self.rows if r.metrics is not None and r.metrics.empty)
        one_side = sum(1 for r in self.rows if r.metrics is None)
        text = (f"{len(compared)} tensors compared, {len(compared) - failed} pass, {failed} fail"
                + (f", {empty} empty on both sides" if empty else "")
                + (f", {one_side} on one side only" if one_side else ""))
        ops = self.uncovered.get("subgraph_ops", 0)
        if ops:
            text += f"; {ops} op(s) inside If/Loop/Scan bodies not dumped"
        return text

    def __json__(self) -> dict:
        """The ``studio compare --json`` form (:func:`studio.serial.to_json`)."""
        return {"golden": self.golden, "target": self.target,
                "golden_mode": self.golden_mode, "target_mode": self.target_mode,
                "passed": bool(self), "summary": self.summary(), "uncovered": self.uncovered,
                "thresholds": self.thresholds, "rows": self.rows, "findings": self.findings}

    def to_json(self) -> dict:  # alias kept until the ops layer calls serial directly
        return to_json(self)

    def __str__(self) -> str:
        lines = [f"golden: {self.golden} [{MODE_LABELS.get(self.golden_mode, self.golden_mode)}]",
                 f"target: {self.target} [{MODE_LABELS.get(self.target_mode, self.target_mode)}]", ""]
        header = (f"{'#':>4}  {'op':<40} {'type':<14} {'cosine':>9} {'max_abs':>10} {'rmse':>10} "
                  f"{'rel_euc':>9} {'kl':>9}  status")
        lines += [header, "-" * len(header)]
        for r in self.rows:
            name = r.name if len(r.name) <= 40 else "…" + r.name[-39:]
            if r.metrics is None:
                lines.append(f"{r.index:>4}  {name:<40} {r.op_type[:14]:<14} {'':>9} {'':>10} {'':>10} "
                             f"{'':>9} {'':>9}  {r.status}" + (f" ({r.note})" if r.note else ""))
                continue
            m = r.metrics
            lines.append(f"{r.index:>4}  {name:<40} {r.op_type[:14]:<14} {m.cosine:>9.6f} {m.max_abs_err:>10.4g} "
                         f"{m.rmse:>10.4g} {m.rel_euclidean:>9.4g} {m.kl_div:>9.3g}  {r.status}"
                         + (f" ({', '.join(r.violations)})" if r.violations else ""))
        lines += ["", self.summary(), ""]
        for f in self.findings:
            lines.append(f"[{f.type}] {f.message}")
            lines.append(f"    advice: {f.advice}")
        return "\n".join(lines)

    def write_csv(self, path: Path | str) -> Path:
        """Write msaccucmp-style columns (plus shapes and tensor locators) to ``path``."""
        from studio.tools.accuracy.report_csv import write_csv

        return write_csv(self, Path(path))


def build_rows(pairs: list[Pair], golden: DumpSet, target: DumpSet) -> list[Row]:
    """Rows (without metrics yet) for matched pairs and one-side-only tensors."""
    inputs = set(golden.inputs) | set(target.inputs)
    outputs = set(golden.graph_outputs) | set(target.graph_outputs)
    rows = []
    for index, pair in enumerate(pairs):
        main = pair.target or pair.golden
        op_type = (pair.target.op_type if pair.target else pair.golden.op_type)
        is_input = any(e is not None and (e.op_type in ("Input", "Data") or e.tensor in inputs)
                       for e in (pair.golden, pair.target))
        is_output = any(e is not None and e.tensor in outputs for e in (pair.golden, pair.target))
        rows.append(Row(index=index, name=main.op_name, op_type=op_type, golden=pair.golden, target=pair.target,
                        how=pair.how, note=pair.note, is_input=is_input, is_output=is_output,
                        golden_file=golden.locate(pair.golden) if pair.golden else "",
                        target_file=target.locate(pair.target) if pair.target else ""))
    return rows


def compare_dumps(golden: Path | str | DumpSet, target: Path | str | DumpSet,
                  mapping: dict[str, list[str]] | None = None, thresholds: Thresholds | None = None,
                  cancel: CancelToken | None = None) -> Generator[Progress, None, CompareResult]:
    """Job: read both dumps, pair their tensors, compute every metric, run the advisor."""
    thresholds = thresholds or Thresholds()
    yield Progress(None, "reading dumps")
    g = golden if isinstance(golden, DumpSet) else load_dump(golden)
    t = target if isinstance(target, DumpSet) else load_dump(target)
    rows = build_rows(match(g, t, mapping), g, t)
    todo = [r for r in rows if r.golden is not None and r.target is not None]
    for count, row in enumerate(todo):
        if cancel is not None:
            cancel.raise_if_cancelled()
        yield Progress(count / max(1, len(todo)), f"comparing {row.name}")
        # Mapped, not read: the metrics walk the files block by block, so a tensor larger
        # than memory is compared without being loaded whole.
        golden_data, target_data = g.load(row.golden, mmap=True), t.load(row.target, mmap=True)
        row.metrics = compare_arrays(golden_data, target_data, cancel=cancel)
        if golden_data.shape != target_data.shape and golden_data.size == target_data.size:
            row.metrics.reasons.append(f"shapes differ ({list(golden_data.shape)} vs "
                                       f"{list(target_data.shape)}); compared element by element")
        row.violations = thresholds.violations(row.metrics)
        if "mean_rel_err" in row.violations:  # say why: usually golden values near zero
            _explain_relative_error(row.metrics, golden_data, target_data)
        del golden_data, target_data
    fp16_target = t.mode in FP16_MODES
    from studio.tools.accuracy.underflow import mark_underflows

    mark_underflows(rows, g, t, fp16_target, cancel=cancel)
    uncovered = _uncovered(g, t)
    findings = advise(rows, thresholds.cosine, fp16_target=fp16_target, uncovered=uncovered,
                      thresholds=thresholds)
    yield Progress(1.0, f"compared {len(todo)} tensors")
    return CompareResult(rows=rows, findings=findings, golden=str(g.root), target=str(t.root),
                         golden_mode=g.mode, target_mode=t.mode, thresholds=thresholds,
                         model=t.model, golden_model=g.model, uncovered=uncovered)


FP16_MODES = ("fp16-sim", "npu", "fp16")


def _explain_relative_error(m: Metrics, golden_data, target_data) -> None:
    """Record (and say in the reason) how much of a failing mean relative error near-zero golden values make."""
    from studio.tools.accuracy.metrics import near_zero_share

    near = near_zero_share(golden_data, target_data)
    if near is None:
        return
    m.rel_err_near_zero = near
    m.reasons.append(f"mean relative error {m.mean_rel_err:.3g}: {near['share']:.0%} of it from {near['elements']} "
                     f"element(s) with golden |g| < {near['below']:.2g} (near zero); "
                     f"{near['without']:.3g} over the others")


def _uncovered(golden: DumpSet, target: DumpSet) -> dict:
    """What neither dump shows: ops inside sub-graph bodies (their manifests count them)."""
    result: dict = {}
    for dump in (target, golden):
        info = dump.info.get("subgraphs") if isinstance(dump.info, dict) else None
        if isinstance(info, dict) and isinstance(info.get("ops"), int) and info["ops"] > 0:
            nodes = info.get("nodes") if isinstance(info.get("nodes"), list) else []
            result = {"subgraph_ops": info["ops"], "subgraph_nodes": [str(n) for n in nodes[:50]],
                      "fp16_simulated_inside": bool(info.get("fp16_simulated", False))}
            break
    return result
