"""What the Converter's Quantize page shows of a ``studio quantize`` result, without widgets: the
measured table (FP32, INT8, mixed; the task metrics measured get a column each, as the CLI's
table), both rollback searches, the sensitivity ranking, the summary line, the Ascend files (AMCT's
configuration, its command line, the ATC line, and where they ran), and the sensitivity overlay the
graph panel draws.

Every figure is the engine's own (:class:`studio.tools.quantize.run.QuantizeResult`), formatted as
the CLI prints it, so the page and ``studio quantize`` read the same.
"""

from __future__ import annotations

from pathlib import Path

from studio.ui.links import Overlay

# Overlay bands for a top-1 target, where the target names no cosine to derive them from.
TOP1_BANDS = (1e-3, 1e-2)
#: The task metrics' column titles (the keys of the accuracy the engine measured).
METRIC_COLUMNS = {"top1": "Top-1", "map50": "mAP@0.5", "dice": "Dice", "iou": "IoU"}
SEARCH_COLUMNS = ("Search", "Layers in float", "Runs", "Layers")
SENSITIVITY_COLUMNS = ("Layer", "Type", "1 − cos", "Act kurtosis", "Act MSE", "W kurtosis", "Rolled back")


def default_output(model: Path, folder: Path | None) -> Path:
    """Where the mixed model goes unless the user says: ``<model>_int8.onnx`` in ``folder`` (the
    workspace's convert folder) or beside the model."""
    model = Path(model)
    return Path(folder or model.parent) / f"{model.stem}_int8.onnx"


def cosine_text(value: float) -> str:
    return f"{value:.6f}"


def top1_text(value: float | None) -> str:
    """A task metric (a fraction) as percent, "-" when not measured."""
    return "-" if value is None else f"{value * 100:.1f} %"


def metrics_shown(result) -> list[str]:
    """The task metrics the table shows: top-1 always (as the CLI), mAP, Dice and IoU when measured."""
    return [m for m in METRIC_COLUMNS
            if m == "top1" or any(getattr(row.accuracy, m) is not None for row in result.table)]


def table_columns(result) -> list[str]:
    """The measured table's headers for ``result`` (None: before any result)."""
    metrics = metrics_shown(result) if result is not None else ["top1"]
    return ["Model", "In float", "Min cosine", *(METRIC_COLUMNS[m] for m in metrics), "ms", "Latency vs FP32"]


#: What the measured table's short headers mean (their tooltips).
COLUMN_TIPS = {"In float": "Layers left in floating point", "Min cosine": "Lowest cosine of any output against "
               "FP32 over the evaluation samples", "ms": "Median latency, ONNX Runtime on this computer's CPU",
               "Latency vs FP32": "Interleaved timing against FP32: the change with its 95 % interval, or \"no "
                                  "significant change\""}


def latency_text(change) -> str:
    """The verdict and the change with its interval; "-" for FP32 or when timing was skipped."""
    if change is None:
        return "-"
    if not change.significant:
        return f"no significant change ({change.change_pct_low:+.1f} % to {change.change_pct_high:+.1f} %)"
    return (f"{change.verdict}: {change.change_pct:+.1f} % "
            f"({change.change_pct_low:+.1f} % to {change.change_pct_high:+.1f} %)")


def latency_tip(change) -> str:
    if change is None:
        return ""
    return (f"{change.base_ms:.4g} ms (FP32) -> {change.new_ms:.4g} ms, median of {change.rounds} interleaved "
            f"rounds in {change.seconds:.1f} s, ONNX Runtime on this computer's CPU")


def table_rows(result) -> list[tuple[list[str], list[str]]]:
    """(cells, tooltips) per row of the measured table: FP32, INT8, mixed."""
    rows = []
    for row in result.table:
        median = "-"
        if row.latency is not None:
            median = f"{row.latency.new_ms:.4g}"
        elif row.name == "FP32":
            base = next((r.latency for r in result.table if r.latency is not None), None)
            median = f"{base.base_ms:.4g}" if base is not None else "-"
        metrics = [top1_text(getattr(row.accuracy, m)) for m in metrics_shown(result)]
        cells = [row.name, str(row.rolled_back), cosine_text(row.accuracy.min_cosine), *metrics, median,
                 latency_text(row.latency)]
        tips = ["" if row.name != "mixed" else str(result.out), "", "", *([""] * len(metrics)), "; ".join(row.notes),
                latency_tip(row.latency)]
        rows.append((cells, tips))
    return rows


def search_rows(result) -> list[tuple[list[str], bool]]:
    """(cells, chosen) per rollback search; the chosen one is the set written."""
    chosen_set = list(result.fallback)
    rows, marked = [], False
    for found in result.searches:
        chosen = not marked and list(found.rollback) == chosen_set
        marked = marked or chosen
        rows.append(([found.method + (" (chosen)" if chosen else ""), str(found.size), str(found.runs),
                      ", ".join(found.rollback) or "none"], chosen))
    return rows


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None or value != value else format(value, spec)


def sensitivity_rows(result) -> list[list[str]]:
    """One row per quantised layer, most sensitive first."""
    fallback = set(result.fallback)
    rows = []
    for item in result.sensitivity:
        act, weight = item.activation, item.weight
        rows.append([item.name, item.op_type, f"{item.error:.3g}", _num(act.kurtosis if act else None, ".2f"),
                     _num(act.mse if act else None, ".3g"), _num(weight.kurtosis if weight else None, ".2f"),
                     "yes" if item.name in fallback else ""])
    return rows


def summary(result, names: bool = True) -> str:
    """One line: what was rolled back (``names``: which layers), what the mixed model reaches, where
    it was written."""
    mixed = result.table[-1].accuracy
    reached = f"min cosine {cosine_text(mixed.min_cosine)}"
    for metric in metrics_shown(result):
        if getattr(mixed, metric) is not None:
            reached += f", {METRIC_COLUMNS[metric]} {top1_text(getattr(mixed, metric))}"
    kept = f" ({', '.join(result.fallback) or 'none'})" if names else ""
    return (f"{len(result.fallback)} of {result.layers} layer(s) left in float{kept}; the mixed model reaches "
            f"{reached} for the target {result.target}. Wrote {Path(result.out).name}.")


def ascend_text(result) -> str:
    """The Ascend files of ``result`` as a user reads them: where they are, AMCT's configuration, the
    amct_onnx and atc lines, and, after a host run, where they ran and what came back ("" without
    --ascend)."""
    import shlex

    ascend = result.ascend
    if not ascend:
        return ""
    try:
        config = Path(ascend["config"]).read_text(encoding="utf-8").strip()
    except OSError as exc:
        config = f"# {ascend['config']} cannot be read: {exc.strerror}"
    lines = [f"# {ascend['folder']}: amct.cfg, data/, commands.sh", "", "# amct.cfg", config, "",
             "# commands.sh (AMCT, then ATC on its deployable model)", shlex.join(ascend["amct"]),
             shlex.join(ascend["atc"])]
    if "ran_on" in ascend:
        lines += ["", f"# ran on {ascend['ran_on']} in {ascend['seconds']:.1f} s (work folder {ascend['work']}); "
                      "fetched:", f"#   {ascend['om_local']}", f"#   {ascend['deploy_model_local']}",
                  f"#   {ascend['log']} (the run's report)"]
    else:
        lines += ["", "# not run: choose a host under Ascend to run them there, or run sh commands.sh on one"]
    return "\n".join(lines)


def overlay_thresholds(min_cosine: float | None) -> tuple[list[float], str]:
    """Bands of the sensitivity overlay and what they mean: for a cosine target c, a tenth of the
    error the target allows and the error itself (above it, the layer alone misses the target);
    ``None`` (a task target: top-1, mAP, Dice, IoU) gives fixed bands, and says so."""
    if min_cosine is not None:
        allowed = max(1.0 - min_cosine, 1e-9)
        return [allowed / 10.0, allowed], f"above {allowed:g} a layer alone misses min cosine {min_cosine:g}"
    return list(TOP1_BANDS), "bands at 0.001 and 0.01: a task target names no cosine"


def sensitivity_overlay(result, min_cosine: float | None, model: Path | None = None) -> Overlay:
    """Each quantised layer coloured by its error alone (1 - min cosine); the text beside a box says
    which layers were rolled back ("in float", short: the graph gives it ~90 px). ``model``: the
    model drawn (default the FP32 one); in the mixed
    model of the QOperator form ONNX Runtime renamed the quantised layers ``NAME_quant``."""
    model = Path(model) if model is not None else Path(result.model)
    fallback = set(result.fallback)
    renamed = model != Path(result.model) and result.settings.format == "qoperator"
    values, labels = {}, {}
    for item in result.sensitivity:
        name = item.name + "_quant" if renamed and item.name not in fallback else item.name
        values[name] = float(item.error)
        labels[name] = f"{item.error:.2g}" + (" · in float" if item.name in fallback else "")
    thresholds, _ = overlay_thresholds(min_cosine)
    return Overlay("INT8 sensitivity (1 − cos, layer quantised alone)", values, thresholds,
                   higher_is_better=False, model=model, labels=labels)
