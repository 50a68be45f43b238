"""The report as one self-contained HTML file: styles inline, plots as inline SVG, no scripts
fetched from anywhere (it opens from a mail attachment or an air-gapped machine)."""

from __future__ import annotations

import math
from html import escape

from studio.tools.advisor.model import SEVERITIES, Report
from studio.tools.advisor.roofline import memory_roofs, roof_caption

_COLOURS = {"high": "#b5495b", "medium": "#e09a12", "low": "#4f9d72"}
_BOUND_COLOURS = {"compute-bound": "#3d6fb6", "memory-bound": "#b54a3c", "latency-bound": "#8a8f99",
                  "compute-region": "#9db6dd", "memory-region": "#e3a89f", "above-roof": "#d4a017"}
_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222}
h1{margin:0 0 4px} .verdict{font-size:16px;margin:8px 0 16px;padding:8px 12px;background:#f3f5f8;border-radius:6px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f8}.num{text-align:right}.finding{border-left:5px solid;padding:4px 12px;margin:10px 0;background:#fafafa}
.tag{display:inline-block;font-size:12px;padding:0 6px;border-radius:8px;background:#e8ecf2;margin-right:4px}
code{font-size:12px}.muted{color:#666}svg text{font:11px sans-serif}"""


def render_html(report: Report) -> str:
    """The whole page."""
    s = report.summary()
    perf = report.performance
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Model Performance Report</title>",
           f"<style>{_CSS}</style></head><body>", "<h1>Model Performance Report</h1>",
           f"<div class='verdict'><b>Verdict:</b> {escape(s['verdict'])}</div><ul>"]
    for key, value in report.inputs.items():
        out.append(f"<li>{escape(key)}: <code>{escape(value)}</code></li>")
    dev = report.device
    out.append(f"<li>roofline device: <b>{escape(str(dev.get('name')))}</b>"
               + (" <span class='tag'>estimate</span>" if dev.get("estimate") else "")
               + f" <span class='muted'>{escape(dev.get('source', ''))}</span></li></ul>")
    out.append("<h2>Performance</h2><table>")
    rows = []
    if perf.get("step_ms"):
        rows.append(("step", f"{perf['step_ms']:.3f} ms — {perf.get('step_source', '')}"))
        rows.append(("throughput", f"{perf.get('throughput_per_s', 0):.1f} inferences/s at batch {perf.get('batch') or '?'}"))
    for k, v in (perf.get("latency_ms") or {}).items():
        rows.append((f"latency {k}", f"{v:.3f} ms"))
    for key in ("compute_utilisation", "bandwidth_utilisation"):
        if key in perf:
            rows.append((key.replace("_", " "), f"{perf[key]:.2%} (estimate)"))
    if perf.get("time_by_bound"):
        rows.append(("op time by bound", ", ".join(f"{k} {v:.0%}" for k, v in perf["time_by_bound"].items())))
    out += [f"<tr><th>{escape(a)}</th><td>{escape(b)}</td></tr>" for a, b in rows] + ["</table>"]
    if perf.get("time_by_category"):
        out.append("<h3>Time by op category</h3>" + _bars([(c["category"], c["ms"]) for c in perf["time_by_category"]]))
    if perf.get("top_ops"):
        out.append("<h3>Top ops</h3><table><tr><th>op</th><th>type</th><th>ms</th><th>share</th></tr>")
        out += [f"<tr><td><code>{escape(o['name'])}</code></td><td>{escape(o['op_type'])}</td>"
                f"<td class='num'>{o['ms']:.3f}</td><td class='num'>{o['share']:.1%}</td></tr>" for o in perf["top_ops"]]
        out.append("</table>")
    out.append("<h2>Findings</h2>")
    for sev in SEVERITIES:
        group = [f for f in report.sorted_findings() if f.severity == sev]
        if not group:
            continue
        out.append(f"<h3 style='color:{_COLOURS[sev]}'>{sev.capitalize()} ({len(group)})</h3>")
        for f in group:
            tags = [f.id, f.source, f.gain_text()]
            tags += ["changes accuracy"] if f.changes_accuracy else []
            tags += [f"automatic fix: {f.fix}"] if f.fix else []
            out.append(f"<div class='finding' style='border-color:{_COLOURS[sev]}'><b>{escape(f.title)}</b><br>"
                       + "".join(f"<span class='tag'>{escape(t)}</span>" for t in tags) + "<ul>"
                       + "".join(f"<li>{escape(e)}</li>" for e in f.evidence) + "</ul>"
                       + f"<p><b>Recommendation:</b> {escape(f.recommendation)}</p>")
            if f.nodes:
                out.append("<p class='muted'>Nodes: " + ", ".join(f"<code>{escape(n)}</code>" for n in f.nodes[:30])
                           + (f" … ({len(f.nodes)} in all)" if len(f.nodes) > 30 else "") + "</p>")
            for sheet, table in (f.details or {}).items():
                out.append(f"<details><summary>{escape(sheet)} ({len(table['rows'])} rows)</summary><table><tr>"
                           + "".join(f"<th>{escape(str(c))}</th>" for c in table["columns"]) + "</tr>")
                for row in table["rows"][:50]:
                    out.append("<tr>" + "".join(f"<td>{escape(str(c)).replace(chr(10), '<br>')}</td>" for c in row) + "</tr>")
                out.append("</table></details>")
            if f.links:
                out.append("<p>" + " · ".join(f"<a href='file://{escape(link)}'>{escape(link.rsplit('/', 1)[-1])}</a>"
                                              for link in f.links) + "</p>")
            out.append("</div>")
    if report.roofline:
        out.append("<h2>Roofline</h2>" + roofline_svg(report))
        out.append("<table><tr><th>op</th><th>type</th><th>GFLOP</th><th>MB</th><th>time us</th><th>FLOP/byte</th>"
                   "<th>bound</th></tr>")
        for p in sorted(report.roofline, key=lambda p: -(p.time_us or 0))[:80]:
            out.append(f"<tr><td><code>{escape(p.name)}</code></td><td>{escape(p.op_type)}</td>"
                       f"<td class='num'>{p.flops / 1e9:.4f}</td><td class='num'>{p.bytes / 1e6:.3f}</td>"
                       f"<td class='num'>{'%.1f' % p.time_us if p.time_us else '-'}</td>"
                       f"<td class='num'>{p.intensity:.2f}</td><td>{escape(p.bound)}</td></tr>")
        out.append("</table>")
    if report.loop:
        out.append(loop_html(report.loop))
    if report.notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in report.notes) + "</ul>")
    out.append("</body></html>")
    return "\n".join(out)


def _bars(items: list[tuple[str, float]]) -> str:
    top = max((v for _, v in items), default=0) or 1.0
    rows = []
    for i, (label, value) in enumerate(items):
        w = 500 * value / top
        rows.append(f"<text x='0' y='{i * 20 + 14}'>{escape(label)}</text>"
                    f"<rect x='140' y='{i * 20 + 3}' width='{w:.1f}' height='14' fill='#3d6fb6'/>"
                    f"<text x='{145 + w:.1f}' y='{i * 20 + 14}'>{value:.3f} ms</text>")
    return f"<svg width='760' height='{len(items) * 20 + 6}'>" + "".join(rows) + "</svg>"


def roofline_svg(report: Report, width: int = 760, height: int = 420) -> str:
    """Log-log roofline: the device's roof and one dot per op (measured ops at their achieved FLOP/s,
    unmeasured ones on the roof, hollow)."""
    peak = float(report.device.get("fp32_flops") or report.device.get("fp16_flops") or 1.0)
    bw = float(report.device.get("bandwidth") or 1.0)
    pts = [p for p in report.roofline if p.intensity > 0]
    if not pts:
        return "<p class='muted'>No op with both work and traffic known.</p>"
    ys = [p.achieved_flops or p.attainable_flops for p in pts]
    x0 = 10 ** math.floor(math.log10(min(p.intensity for p in pts)))
    x1 = 10 ** math.ceil(math.log10(max(max(p.intensity for p in pts), peak / bw * 10)))
    y1 = 10 ** math.ceil(math.log10(peak * 1.5))
    y0 = 10 ** math.floor(math.log10(max(min(y for y in ys if y > 0), y1 / 1e8)))
    ml, mb = 60, 40

    def px(x, y):
        fx = (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))
        fy = (math.log10(max(y, y0)) - math.log10(y0)) / (math.log10(y1) - math.log10(y0))
        return ml + fx * (width - ml - 10), (height - mb) - fy * (height - mb - 10)

    parts = [f"<svg width='{width}' height='{height}' style='border:1px solid #ddd'>"]
    for k, (label, level) in enumerate(memory_roofs(report.device)):
        ridge = peak / level
        roof = [(x0, x0 * level), (ridge, peak), (x1, peak)]
        style = "stroke='#222' stroke-width='2'" if k == 0 else "stroke='#999' stroke-width='1' stroke-dasharray='4 3'"
        parts.append(f"<polyline fill='none' {style} points='" + " ".join("%.1f,%.1f" % px(x, y) for x, y in roof)
                     + f"'><title>memory roof {escape(label)}</title></polyline>")
    for p, y in zip(pts, ys):
        cx, cy = px(p.intensity, y)
        colour = _BOUND_COLOURS.get(p.bound, "#555")
        fill = colour if p.time_us else "none"
        parts.append(f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='4' fill='{fill}' stroke='{colour}'>"
                     f"<title>{escape(p.name)} ({escape(p.op_type)}): {p.bound}, {p.intensity:.2f} FLOP/B</title></circle>")
    decade = x0
    while decade <= x1:
        x, _ = px(decade, y0)
        parts.append(f"<text x='{x - 8:.0f}' y='{height - mb + 16}'>{decade:g}</text>")
        decade *= 10
    decade = y0
    while decade <= y1:
        _, y = px(x0, decade)
        parts.append(f"<text x='2' y='{y + 4:.0f}'>{decade / 1e9:g} G</text>")
        decade *= 100
    parts.append(f"<text x='{width / 2 - 80:.0f}' y='{height - 6}'>arithmetic intensity (FLOP/byte)</text>")
    legend = [b for b in _BOUND_COLOURS if any(p.bound == b for p in pts)]
    for i, b in enumerate(legend):
        parts.append(f"<circle cx='{ml + 14}' cy='{20 + i * 16}' r='4' fill='{_BOUND_COLOURS[b]}'/>"
                     f"<text x='{ml + 24}' y='{24 + i * 16}'>{b}</text>")
    parts.append("</svg>")
    caption = roof_caption(report.roofline_check, str(report.device.get("name")))
    return "".join(parts) + (f"<p><b>{escape(caption)}</b></p>" if caption else "")


def loop_html(loop: dict) -> str:
    """The closed loop's before / after: latency, per-output accuracy, per-op times."""
    from studio.tools.advisor.fixes import describe_applied

    b, a, applied = loop["before_ms"], loop["after_ms"], loop["applied"]
    out = ["<h2>Closed loop: before / after</h2>",
           f"<p>{escape(describe_applied(applied))} &rarr; <code>{escape(loop['fixed'])}</code>; "
           + "".join(f"<br><b>Warning:</b> {escape(w)}" for w in applied.get("warnings", []))
           + "; profiled with the same settings "
           f"({loop['settings'].get('iterations')} iterations, {loop['settings'].get('warmup')} warm-ups, "
           f"seed {loop['settings'].get('seed')}).</p><table cellpadding='4'><tr><th></th><th>before</th><th>after</th></tr>"]
    for key in ("mean", "p50", "p90", "p99"):
        if key in b or key in a:
            out.append(f"<tr><th>latency {key}</th><td class='num'>{b.get(key, 0):.3f} ms</td>"
                       f"<td class='num'>{a.get(key, 0):.3f} ms</td></tr>")
    from studio.tools.advisor.loop import change_text

    verdict = change_text(loop)
    out.append(f"<tr><th>latency</th><td colspan='2'><b>{escape(verdict.split(':')[0])}</b>"
               f"{escape(verdict[len(verdict.split(':')[0]):])}</td></tr>")
    out.append("</table><table cellpadding='4'><tr><th>output</th><th>cosine</th><th>max abs error</th><th>verdict</th></tr>")
    for o in loop["outputs"]:
        out.append(f"<tr><td><code>{escape(o['output'])}</code></td><td class='num'>{o['cosine']:.6f}</td>"
                   f"<td class='num'>{o['max_abs_err']:.4g}</td><td>{'pass' if o['passed'] else '<b>FAIL</b>'}</td></tr>")
    out.append("</table><table cellpadding='4'><tr><th>op</th><th>type</th><th>before us</th><th>after us</th></tr>")
    for r in loop["ops"][:40]:
        before = f"{r['before_us']:.1f}" if r["before_us"] is not None else "-"
        after = f"{r['after_us']:.1f}" if r["after_us"] is not None else "-"
        out.append(f"<tr><td><code>{escape(r['name'])}</code></td><td>{escape(r['op_type'])}</td>"
                   f"<td class='num'>{before}</td><td class='num'>{after}</td></tr>")
    out.append("</table>")
    return "".join(out)
