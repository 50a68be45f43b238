"""Compare two dumps op by op: rows of metrics, the advisor's findings, a result object.

``CompareResult`` prints its table, is truthy when every compared row passes (Polygraphy's
habit), and converts to JSON and to a CSV with msaccucmp's columns (see :mod:`.csv_write`, read back by
:mod:`.report_csv`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json
from studio.tools.accuracy.advisor import Finding, advise
from studio.tools.accuracy.diagnosis import Diagnosis, diagnose
from studio.tools.accuracy.dumpset import FP16_MODES, MODE_LABELS, DumpSet, load_dump
from studio.tools.accuracy.tensors import DTYPE_AS_RUN_MODES
from studio.tools.accuracy.matching import Pair, match
from studio.tools.accuracy.metrics import Metrics, Thresholds, compare_arrays
from studio.tools.accuracy.row import Row


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
    diagnosis: Diagnosis | None = None  # the verdict on the outputs and its cause (see .diagnosis)

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
        masked = sum(1 for r in compared if r.mask)
        failed = sum(1 for r in compared if r.violations and not r.mask)
        empty = sum(1 for r in self.rows if r.metrics is not None and r.metrics.empty)
        one_side = sum(1 for r in self.rows if r.metrics is None)
        text = (f"{len(compared)} tensors compared, {len(compared) - failed - masked} pass, {failed} fail"
                + (f", {masked} attention mask (not judged)" if masked else "")
                + (f", {empty} empty on both sides" if empty else "")
                + (f", {one_side} on one side only" if one_side else ""))
        ops = self.uncovered.get("subgraph_ops", 0)
        if ops:
            text += f"; {ops} op(s) inside If/Loop/Scan bodies not dumped"
        return text

    def __json__(self) -> dict:
        """The ``studio compare --json`` form (:func:`studio.core.serial.to_json`)."""
        return {"golden": self.golden, "target": self.target,
                "golden_mode": self.golden_mode, "target_mode": self.target_mode,
                "passed": bool(self), "summary": self.summary(), "uncovered": self.uncovered,
                "thresholds": self.thresholds, "diagnosis": self.diagnosis, "rows": self.rows,
                "findings": self.findings}


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
            if m.target_nonfinite or m.golden_nonfinite:
                # Metrics over the finite pairs alone would read as a perfect match: show the count.
                bad = f"inf/NaN: {m.target_nonfinite} target, {m.golden_nonfinite} golden of {m.size}"
                lines.append(f"{r.index:>4}  {name:<40} {r.op_type[:14]:<14} {bad:<51}  {r.status}")
                continue
            lines.append(f"{r.index:>4}  {name:<40} {r.op_type[:14]:<14} {m.cosine:>9.6f} {m.max_abs_err:>10.4g} "
                         f"{m.rmse:>10.4g} {m.rel_euclidean:>9.4g} {m.kl_div:>9.3g}  {r.status}"
                         + (f" ({', '.join(r.violations)})" if r.violations else ""))
        lines += ["", self.summary(), ""]
        for f in self.findings:
            lines.append(f"[{f.type}] {f.message}")
            lines.append(f"    advice: {f.advice}")
        if self.diagnosis is not None:
            lines += ["", str(self.diagnosis)]
        return "\n".join(lines)

    def write_csv(self, path: Path | str) -> Path:
        """Write msaccucmp-style columns (plus shapes and tensor locators) to ``path``."""
        from studio.tools.accuracy.csv_write import write_csv

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
    result = yield from judge_rows(rows, g, t, thresholds, cancel=cancel)
    return result


def judge_rows(rows: list[Row], g: DumpSet, t: DumpSet, thresholds: Thresholds, cancel: CancelToken | None = None,
               model=None) -> Generator[Progress, None, CompareResult]:
    """Job: every metric of ``rows``, their attention masks and underflows, the advisor's findings and
    the diagnosis — shared by dump comparisons and in-memory runs (:mod:`.run_compare`).
    ``model``: the ONNX model, when the caller holds it (else the one the dumps name)."""
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
    if fp16_target:
        mark_masks(rows, g, t, model)
    from studio.tools.accuracy.underflow import mark_underflows

    mark_underflows(rows, g, t, fp16_target, cancel=cancel)
    uncovered = uncovered_parts(g, t)
    findings = advise(rows, thresholds.cosine, fp16_target=fp16_target, uncovered=uncovered,
                      thresholds=thresholds, dtype_as_run=t.mode in DTYPE_AS_RUN_MODES)
    yield Progress(1.0, f"compared {len(todo)} tensors")
    return CompareResult(rows=rows, findings=findings, golden=str(g.root), target=str(t.root),
                         golden_mode=g.mode, target_mode=t.mode, thresholds=thresholds,
                         model=t.model, golden_model=g.model, uncovered=uncovered,
                         diagnosis=diagnose(rows, findings, thresholds))


def rejudge(result: CompareResult, thresholds: Thresholds) -> CompareResult:
    """The same comparison judged by other limits (no tensor is read again): each row's violations,
    the findings and the diagnosis anew, in a new result."""
    import copy

    from studio.tools.accuracy.tensors import DTYPE_AS_RUN_MODES
    from studio.tools.accuracy.tensors import FP16_MODES as modes

    rows = []
    for row in result.rows:
        row = copy.copy(row)
        row.violations = thresholds.violations(row.metrics) if row.metrics is not None else []
        rows.append(row)
    findings = advise(rows, thresholds.cosine, fp16_target=result.target_mode in modes, uncovered=result.uncovered,
                      thresholds=thresholds, dtype_as_run=result.target_mode in DTYPE_AS_RUN_MODES)
    return CompareResult(rows=rows, findings=findings, golden=result.golden, target=result.target,
                         golden_mode=result.golden_mode, target_mode=result.target_mode, thresholds=thresholds,
                         model=result.model, golden_model=result.golden_model, uncovered=result.uncovered,
                         diagnosis=diagnose(rows, findings, thresholds))


def mark_masks(rows: list[Row], golden: DumpSet, target: DumpSet, model=None) -> None:
    """Mark the rows on attention-mask paths (:func:`studio.core.fp16_graph.mask_tensors` of the
    dumped ONNX model, or ``model``): their values saturate in FP16 by design and are not judged."""
    from studio.core.fp16_graph import mask_tensors

    if model is None:
        model = _onnx_model(target) or _onnx_model(golden)
    masks = mask_tensors(model) if model is not None else set()
    if not masks:
        return
    for row in rows:
        tensors = {e.tensor for e in (row.golden, row.target) if e is not None}
        if tensors & masks:
            row.mask = True
            row.note = (row.note + "; " if row.note else "") + Row.MASK_NOTE


def _onnx_model(dump: DumpSet):
    """The ONNX model a dump names (weights not loaded), or None."""
    if not dump.model or not str(dump.model).lower().endswith(".onnx"):
        return None
    try:
        import onnx

        return onnx.load(str(dump.model), load_external_data=False)
    except Exception:  # noqa: BLE001 - the model may be gone or not ONNX: no mask paths known
        return None


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


def uncovered_parts(golden: DumpSet, target: DumpSet) -> dict:
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
