"""What the Advisor panel shows, without Qt: its inputs, the report's verdict and performance
section, the files a report names, and what the fix loop's result says.

The panel (``panel.py``) lays out the inputs, the findings and the tabs and wires them to this.
"""

from __future__ import annotations

from pathlib import Path

from studio.core.serial import to_json

INPUTS = (("model", "Model", "ONNX or OM model"),
          ("profile", "Profile", "studio profile run folder, PROF_* / ASCEND_PROFILER_OUTPUT folder, trace JSON or CSV"),
          ("accuracy", "Accuracy", "comparison CSV (studio compare, fp16-check, msaccucmp) or its JSON"),
          ("bench", "Benchmark", "benchmark JSON (studio profile run --json, ais_bench summary)"))
AUTO_DEVICE = "automatic"
EMPTY = ("<p>No report yet.</p><p>Give any of a model, a profile, an accuracy result and a benchmark, then "
          "<b>Advise</b>. From the command line: <code>studio advise --model M --profile P --accuracy R "
          "-o report.html</code>.</p>")


def chosen_device(text: str) -> str | None:
    """The device the roofline uses: None lets the advisor pick it from the inputs."""
    return None if text in ("", AUTO_DEVICE) else text


def read_report_job(path: Path):
    """Read a saved report (JSON) as a job."""
    from studio.core.jobs import Progress
    from studio.tools.advisor.model import read_report

    yield Progress(None, f"reading {path.name}")
    return read_report(path)  # inputs stored relative to the report come back whole


def verdict_text(summary: dict) -> str:
    """The verdict line over the findings (rich text): verdict, findings, counts by severity."""
    counts = ", ".join(f"{n} {k}" for k, n in summary["by_severity"].items() if n)
    return f"<b>{summary['verdict']}</b> — {summary['findings']} finding(s)" + (f" ({counts})" if counts else "")


def report_inputs(report) -> dict:
    """The input files a report was made from, by input key (a value may be None)."""
    return {"model": report.model_path, "profile": report.profile_path,
            "accuracy": report.inputs.get("accuracy"), "bench": report.inputs.get("bench")}


def report_model(report) -> Path | None:
    """The model a report is about, or None (also without a report)."""
    return Path(report.model_path) if report and report.model_path else None


def report_profile(report) -> Path | None:
    """The profile a report read, or None (also without a report)."""
    return Path(report.profile_path) if report and report.profile_path else None


def can_apply_fixes(report) -> bool:
    """The report is about an ONNX model and one of its findings has an automatic fix."""
    return bool(report.model_path and str(report.model_path).endswith(".onnx") and any(f.fix for f in report.findings))


def loop_verdict(result) -> str:
    """The verdict line after the fix loop (rich text): what was applied, warnings, latency, cosines."""
    from html import escape

    from studio.tools.advisor.loop import change_text

    latency = change_text(to_json(result))
    cosines = ", ".join(f"{o['output']} {o['cosine']:.6f}" for o in result.outputs)
    grew = "".join(f" <b>Warning:</b> {escape(w)}." for w in result.applied.warnings)
    return (f"<b>{escape(result.applied.describe())}</b>.{grew} Latency {escape(latency)}; "
            f"cosine {cosines} — {'accuracy OK' if result.accuracy_passed else 'ACCURACY CHANGED'}")


def performance_html(report) -> str:
    """The Model Performance Report section as rich text."""
    from html import escape

    perf = report.performance
    rows = [("verdict", perf.get("verdict", ""))]
    if perf.get("step_ms"):
        rows += [("step", f"{perf['step_ms']:.3f} ms ({perf.get('step_source', '')})"),
                 ("throughput", f"{perf.get('throughput_per_s', 0):.1f}/s at batch {perf.get('batch') or '?'}")]
    rows += [(f"latency {k}", f"{v:.3f} ms") for k, v in (perf.get("latency_ms") or {}).items()]
    for key in ("compute_utilisation", "bandwidth_utilisation"):
        if key in perf:
            rows.append((key.replace("_", " "), f"{perf[key]:.2%} (estimate)"))
    if perf.get("time_by_bound"):
        rows.append(("op time by bound", ", ".join(f"{k} {v:.0%}" for k, v in perf["time_by_bound"].items())))
    dev = report.device
    rows.append(("roofline device", f"{dev.get('name')}{' (estimate)' if dev.get('estimate') else ''}: "
                                    f"{dev.get('source', '')}"))
    out = ["<table cellpadding='3'>"] + [f"<tr><th align='left'>{escape(a)}</th><td>{escape(str(b))}</td></tr>"
                                         for a, b in rows] + ["</table>"]
    if perf.get("time_by_category"):
        out.append("<h4>Time by op category</h4><table cellpadding='3'>")
        out += [f"<tr><td>{escape(c['category'])}</td><td align='right'>{c['ms']:.3f} ms</td>"
                f"<td align='right'>{c['share']:.1%}</td></tr>" for c in perf["time_by_category"]]
        out.append("</table>")
    if perf.get("top_ops"):
        out.append("<h4>Top ops</h4><table cellpadding='3'>")
        out += [f"<tr><td><code>{escape(o['name'])}</code></td><td>{escape(o['op_type'])}</td>"
                f"<td align='right'>{o['ms']:.3f} ms</td><td align='right'>{o['share']:.1%}</td></tr>"
                for o in perf["top_ops"]]
        out.append("</table>")
    if report.notes:
        out.append("<h4>Notes</h4><ul>" + "".join(f"<li>{escape(n)}</li>" for n in report.notes) + "</ul>")
    return "".join(out)
