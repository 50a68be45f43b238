"""The report as Markdown (``-o report.md``); the terminal text is :func:`.model.render_text`."""

from __future__ import annotations

from studio.tools.advisor.model import SEVERITIES, Report, loop_lines


def _gain(f) -> str:
    return f.gain_text()


def render_markdown(report: Report) -> str:
    """A Markdown document: summary, performance, findings by severity, roofline table, notes."""
    s = report.summary()
    perf = report.performance
    lines = ["# Model Performance Report", "", f"**Verdict:** {s['verdict']}", ""]
    for key, value in report.inputs.items():
        lines.append(f"- {key}: `{value}`")
    lines.append(f"- device (roofline): {report.device.get('name')}"
                 + (" (estimate)" if report.device.get("estimate") else "") + f" — {report.device.get('source', '')}")
    lines += ["", "## Performance", ""]
    if perf.get("step_ms"):
        lines.append(f"- step: {perf['step_ms']:.3f} ms ({perf.get('step_source', '')}); "
                     f"throughput {perf.get('throughput_per_s', 0):.1f}/s at batch {perf.get('batch') or '?'}")
    if perf.get("latency_ms"):
        lines.append("- latency: " + ", ".join(f"{k} {v:.3f} ms" for k, v in perf["latency_ms"].items()))
    for key, label in (("compute_utilisation", "compute utilisation"), ("bandwidth_utilisation", "bandwidth utilisation")):
        if key in perf:
            lines.append(f"- {label}: {perf[key]:.2%} ({perf.get('utilisation_note', '')})")
    if perf.get("time_by_bound"):
        lines.append("- op time by bound: " + ", ".join(f"{k} {v:.0%}" for k, v in perf["time_by_bound"].items()))
    if perf.get("time_by_category"):
        lines += ["", "| category | ms | share |", "|---|---:|---:|"]
        lines += [f"| {c['category']} | {c['ms']:.3f} | {c['share']:.1%} |" for c in perf["time_by_category"]]
    if perf.get("top_ops"):
        lines += ["", "| top op | type | ms | share |", "|---|---|---:|---:|"]
        lines += [f"| `{o['name']}` | {o['op_type']} | {o['ms']:.3f} | {o['share']:.1%} |" for o in perf["top_ops"]]
    lines += ["", "## Findings", ""]
    for sev in SEVERITIES:
        group = [f for f in report.sorted_findings() if f.severity == sev]
        if not group:
            continue
        lines += [f"### {sev.capitalize()} ({len(group)})", ""]
        for f in group:
            tags = [f.source, _gain(f)] + (["changes accuracy"] if f.changes_accuracy else []) \
                + ([f"fix: {f.fix}"] if f.fix else [])
            lines += [f"#### {f.title}", "", f"`{f.id}` · " + " · ".join(tags), ""]
            lines += [f"- {e}" for e in f.evidence]
            lines += ["", f"**Recommendation:** {f.recommendation}", ""]
            if f.nodes:
                shown = ", ".join(f"`{n}`" for n in f.nodes[:20])
                lines.append(f"Nodes: {shown}" + (f" … ({len(f.nodes)} in all)" if len(f.nodes) > 20 else ""))
            if f.time_ranges:
                lines.append("Time ranges: " + ", ".join(f"{a / 1e6:.3f}–{b / 1e6:.3f} ms" for a, b in f.time_ranges))
            for sheet, table in (f.details or {}).items():
                lines += ["", f"Details ({sheet}):", "", "| " + " | ".join(table["columns"]) + " |",
                          "|" + "---|" * len(table["columns"])]
                for row in table["rows"][:20]:
                    lines.append("| " + " | ".join(str(c).replace("\n", "<br>").replace("|", "\\|")[:300] for c in row) + " |")
            for link in f.links:
                lines.append(f"- [{link.rsplit('/', 1)[-1]}]({link})")
            lines.append("")
    if report.roofline:
        lines += ["## Roofline", "", "| op | type | GFLOP | MB | time us | intensity | bound |",
                  "|---|---|---:|---:|---:|---:|---|"]
        for p in sorted(report.roofline, key=lambda p: -(p.time_us or 0))[:60]:
            t = f"{p.time_us:.1f}" if p.time_us else "-"
            lines.append(f"| `{p.name}` | {p.op_type} | {p.flops / 1e9:.4f} | {p.bytes / 1e6:.3f} | {t} | "
                         f"{p.intensity:.2f} | {p.bound} |")
    if report.loop:
        lines += ["", "## Closed loop: before / after", ""] + [f"    {line}" for line in loop_lines(report.loop)]
    if report.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    return "\n".join(lines) + "\n"
