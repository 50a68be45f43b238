"""What the advisor returns: findings, roofline points and the report that holds them.

A :class:`Finding` is one piece of advice with the numbers behind it. Its severity follows the
share of the step time it saves, as msprof-analyze ranks its problems: at least 5 % of a step is
``high``, at least 3 % ``medium``, anything less ``low`` — and ``high`` needs a *measured* gain
(the fix applied and timed A/B, see :mod:`.gains`); a gain that is only estimated rates
``medium`` at most and says how it was estimated. Findings whose cost is not a time (an FP16
overflow, a failed accuracy check) carry the severity their rule gives and say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.core import serial
from studio.core.errors import UserError
from studio.core.formats import ADVISOR, FileFormat, json_object_with, path_only
from studio.core.safe_read import load_json

HIGH, MEDIUM, LOW = "high", "medium", "low"
SEVERITIES = (HIGH, MEDIUM, LOW)
HIGH_SHARE, MEDIUM_SHARE = 0.05, 0.03
MEASURED, ESTIMATE = "measured", "estimate"  # how a gain was obtained (Finding.gain_basis)
STUDIO, MSPROF_ANALYZE = "studio", "msprof-analyze"
REPORT_FORMAT = "studio-advisor-report"  # first key of the JSON report, so a sniffer knows it


def severity_for(cost_ms: float | None, step_ms: float | None) -> str:
    """``high`` / ``medium`` / ``low`` by ``cost_ms`` over ``step_ms`` (low when either is unknown)."""
    if not cost_ms or not step_ms or step_ms <= 0:
        return LOW
    share = cost_ms / step_ms
    return HIGH if share >= HIGH_SHARE else MEDIUM if share >= MEDIUM_SHARE else LOW


@dataclass
class Finding:
    """One piece of advice.

    ``evidence`` lines carry the numbers and name where each came from (a file, a table, a
    rule); ``gain_ms`` is the saving per step (None when it cannot be estimated), ``gain_basis``
    says whether it was ``measured`` (the fix applied and timed A/B, details in ``measurement``)
    or is an ``estimate``, and ``gain_method`` how; ``lever`` names what a measurement changes
    (``fix:NAME``, or an ONNX Runtime setting such as ``ort:disable=NchwcTransformer``);
    ``nodes`` are graph node names, ``time_ranges`` (start, end) in ns from the trace start.
    ``fix`` names the automatic fix that applies it (see :mod:`studio.tools.advisor.fixes`),
    ``changes_accuracy`` marks fixes that change the model's numbers.
    """

    id: str
    title: str
    severity: str
    category: str
    evidence: list[str] = field(default_factory=list)
    recommendation: str = ""
    gain_ms: float | None = None
    cost_ms: float | None = None
    nodes: list[str] = field(default_factory=list)
    time_ranges: list[tuple[int, int]] = field(default_factory=list)
    source: str = STUDIO
    fix: str | None = None
    changes_accuracy: bool = False
    details: dict[str, Any] | None = None  # msprof-analyze detail tables: {sheet: {"columns", "rows"}}
    links: list[str] = field(default_factory=list)
    gain_basis: str | None = None  # MEASURED | ESTIMATE (set by gains.judge when a gain is given)
    gain_method: str = ""
    measurement: dict[str, Any] | None = None  # the A/B behind a measured gain (gains.measure's entry)
    lever: str | None = None

    __json_round__ = {"gain_ms": 4, "cost_ms": 4}  # studio.core.serial: the ``studio advise --json`` form

    def gain_text(self) -> str:
        """The gain as every view shows it: measured or an estimate, never a bare number."""
        if self.gain_basis == MEASURED:
            if self.gain_ms:
                return f"saves {self.gain_ms:.3f} ms (measured)"
            return "no significant change (measured)" if self.gain_ms == 0 else "slower when applied (measured)"
        return f"up to {self.gain_ms:.3f} ms (estimate)" if self.gain_ms else "saving n/a"


@dataclass
class RooflinePoint:
    """One op on the roofline: work, traffic, measured time (when profiled) and its bound."""

    name: str
    op_type: str
    flops: float
    bytes: float
    time_us: float | None
    bound: str  # compute-bound | memory-bound | latency-bound (| "compute-region"/"memory-region" unmeasured)
    intensity: float = 0.0
    attainable_flops: float = 0.0  # FLOP/s the roof allows at this intensity
    achieved_flops: float | None = None
    ratio: float | None = None  # achieved / attainable

    __json_round__ = {"time_us": 3, "intensity": 4, "ratio": 4}  # studio.core.serial: the JSON form


@dataclass
class Report:
    """Everything one advisor run found, ready to print, export or show."""

    inputs: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    roofline: list[RooflinePoint] = field(default_factory=list)
    device: dict[str, Any] = field(default_factory=dict)
    performance: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    msprof_analyze: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    model_path: str | None = None
    profile_path: str | None = None
    loop: dict[str, Any] | None = None  # the closed loop's before / after (a LoopResult in JSON)
    measurements: dict[str, Any] = field(default_factory=dict)  # lever -> A/B (gains.measure)
    roofline_check: dict[str, Any] = field(default_factory=dict)  # roofline.roof_check: ops above their roof

    def sorted_findings(self) -> list[Finding]:
        """High first, then by gain (largest first)."""
        order = {s: i for i, s in enumerate(SEVERITIES)}
        return sorted(self.findings, key=lambda f: (order.get(f.severity, 9), -(f.gain_ms or f.cost_ms or 0.0), f.id))

    def summary(self) -> dict:
        """Counts by severity and source, the verdict and the headline numbers."""
        by_sev = {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}
        by_src: dict[str, int] = {}
        for f in self.findings:
            by_src[f.source] = by_src.get(f.source, 0) + 1
        gains = [f.gain_ms for f in self.findings if f.gain_ms and f.source == STUDIO and f.gain_basis != MEASURED]
        measured = {(f.measurement or {}).get("lever"): f.gain_ms for f in self.findings
                    if f.gain_ms and f.gain_basis == MEASURED}  # one per lever: findings may share one
        return {"findings": len(self.findings), "by_severity": by_sev, "by_source": by_src,
                "estimated_gain_ms": round(sum(gains), 4) if gains else None,
                "measured_gain_ms": round(sum(measured.values()), 4) if measured else None,
                "verdict": self.performance.get("verdict", ""),
                "step_ms": self.performance.get("step_ms"),
                "device": self.device.get("name")}

    def __json__(self) -> dict:
        """``findings`` (sorted), ``roofline``, ``summary`` (the keys the CLI promises) plus the rest
        (the form :func:`studio.core.serial.to_json` writes)."""
        return {"format": REPORT_FORMAT, "summary": self.summary(), "findings": self.sorted_findings(),
                "roofline": self.roofline, "performance": self.performance,
                "device": self.device, "inputs": self.inputs, "notes": self.notes,
                "msprof_analyze": self.msprof_analyze, "seconds": self.seconds,
                **({"measurements": self.measurements} if self.measurements else {}),
                **({"roofline_check": self.roofline_check} if self.roofline_check else {}),
                **({"loop": self.loop} if self.loop else {})}

    @classmethod
    def __from_json__(cls, data: dict) -> Report:
        """A report read back (the panel opens saved reports)."""
        inputs = data.get("inputs", {})
        return cls(inputs=inputs, findings=serial.from_json(list[Finding], data.get("findings", [])),
                   roofline=serial.from_json(list[RooflinePoint], data.get("roofline", [])),
                   device=data.get("device", {}), performance=data.get("performance", {}), notes=data.get("notes", []),
                   msprof_analyze=data.get("msprof_analyze", {}), seconds=data.get("seconds", {}),
                   model_path=inputs.get("model"), profile_path=inputs.get("profile"), loop=data.get("loop"),
                   measurements=data.get("measurements", {}), roofline_check=data.get("roofline_check", {}))


    def __str__(self) -> str:
        return render_text(self)


def render_text(report: Report) -> str:
    """What ``studio advise`` prints."""
    s = report.summary()
    perf = report.performance
    lines = [f"verdict: {s['verdict']}"]
    if perf.get("step_ms"):
        lines.append(f"step {perf['step_ms']:.3f} ms ({perf.get('step_source', '')})")
    lines.append(f"device for the roofline: {report.device.get('name')}; {len(report.roofline)} ops on it")
    lines.append(f"{s['findings']} finding(s): " + ", ".join(f"{v} {k}" for k, v in s["by_severity"].items()))
    for f in report.sorted_findings():
        lines.append(f"\n[{f.severity.upper()}] {f.title}  ({f.id}, {f.source}, {f.gain_text()}"
                     + (", changes accuracy" if f.changes_accuracy else "") + ")")
        lines += [f"    {e}" for e in f.evidence]
        lines.append(f"    -> {f.recommendation}")
        if f.nodes:
            lines.append("    nodes: " + ", ".join(f.nodes[:8]) + (" ..." if len(f.nodes) > 8 else ""))
    if report.notes:
        lines.append("")
        lines += [f"note: {n}" for n in report.notes]
    if report.loop:
        lines += ["", "closed loop:"] + [f"  {line}" for line in loop_lines(report.loop)]
    return "\n".join(lines)


def loop_lines(loop: dict) -> list[str]:
    """The before / after of a closed loop as text lines."""
    from studio.tools.advisor.loop import change_text

    b, a, applied = loop["before_ms"], loop["after_ms"], loop["applied"]
    from studio.tools.advisor.fixes import describe_applied

    lines = [f"{describe_applied(applied)} -> {loop['fixed']}",
             *(f"WARNING: {w}" for w in applied.get("warnings", [])),
             f"latency: {change_text(loop)}",
             f"profiles (per-op times): p50 {b.get('p50', 0):.3f} ms -> {a.get('p50', 0):.3f} ms, same settings "
             f"({loop['settings'].get('iterations')} iterations, {loop['settings'].get('warmup')} warm-ups, "
             f"seed {loop['settings'].get('seed')})"]
    for o in loop["outputs"]:
        lines.append(f"output {o['output']}: cosine {o['cosine']:.6f}, max abs error {o['max_abs_err']:.4g} "
                     f"-> {'pass' if o['passed'] else 'FAIL'}")
    for r in loop["ops"][:15]:
        before = f"{r['before_us']:.1f}" if r["before_us"] is not None else "-"
        after = f"{r['after_us']:.1f}" if r["after_us"] is not None else "-"
        lines.append(f"op {r['name']} ({r['op_type']}): {before} us -> {after} us")
    return lines


def read_report(path: Path) -> Report:
    """A report saved by ``studio advise -o report.json``."""
    try:
        data = load_json(path, "advisor report")
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"Cannot read the advisor report ({exc})"[:300], path,
                        "Run `studio advise ... -o report.json` again.") from exc
    folder = Path(path).resolve().parent
    inputs = data.get("inputs") if isinstance(data, dict) else None
    if isinstance(inputs, dict):  # stored relative to the report (write_report): made whole again here
        data["inputs"] = {key: str((folder / value).resolve()) if value and not Path(str(value)).is_absolute()
                          else value for key, value in inputs.items()}
    return serial.from_json(Report, data)


def match_report(path: Path, head: bytes) -> bool:
    """A JSON report whose format key says it is Studio's advisor report."""
    return json_object_with(head, r'"format"\s*:\s*"studio-advisor-report"')


ADVISOR_REPORT = FileFormat("advisor_report", "Advisor report (studio advise -o report.json)", ADVISOR, match_report,
                            path_only(read_report))
