"""A benchmark written as a folder the profiler opens: its Summary shows the numbers, its Compare
tab puts two benchmarks (or a benchmark and a profile) side by side.

The folder holds ``studio_profile.json`` (the facts and the JSON keys of the result) and, when the
tool reported per-loop times (ONNX Runtime here, msame), ``trace_view.json`` with one
``inference`` slice per timed loop. The tools print durations only, so the slices are laid end to
end from 0 — the facts say so; their durations are the measured ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from studio.core.errors import UserError
from studio.core.serial import to_json
from studio.tools.bench.result import BenchResult

SLICE = "inference"


def write_bench_folder(result: BenchResult, out: Path) -> Path:
    """Write ``out`` (created; must be empty or absent) and return it."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise UserError("The benchmark folder is not empty", out, "Choose a new folder for -o.")
    out.mkdir(parents=True, exist_ok=True)
    pid = 1
    label = f"{result.tool} on {result.where}"
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"Benchmark ({label})"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": 0, "args": {"name": "timed loops"}},
    ]
    clock = 0.0
    for index, ms in enumerate(result.latencies_ms):
        events.append({"ph": "X", "name": SLICE, "cat": "benchmark", "pid": pid, "tid": 0, "ts": round(clock, 3),
                       "dur": round(ms * 1000.0, 3), "args": {"loop": index + 1}})
        clock += ms * 1000.0
    facts = result.facts()
    if result.latencies_ms:
        facts["timeline"] = "one slice per timed loop, laid end to end (the tool reports durations only)"
    else:
        facts["timeline"] = f"{result.tool} printed statistics only: no per-loop slices"
    (out / "trace_view.json").write_text(json.dumps(events))
    model = Path(result.model)
    summary = {"benchmark": to_json(result), "facts": facts,
               "model": str(model.resolve()) if model.is_file() else str(model)}
    (out / "studio_profile.json").write_text(json.dumps(summary, indent=2))
    return out


def read_bench(folder: Path) -> dict | None:
    """The benchmark a folder written by :func:`write_bench_folder` holds (its JSON keys), or None
    when ``folder`` is no benchmark (a profile, a trace file)."""
    summary = Path(folder) / "studio_profile.json"
    if not summary.is_file():
        return None
    try:
        data = json.loads(summary.read_text())
    except (OSError, ValueError):
        return None
    bench = data.get("benchmark") if isinstance(data, dict) else None
    return bench if isinstance(bench, dict) else None


def relabel_bench_folder(folder: Path, where: str, model: Path) -> None:
    """Name the machine and model of a benchmark folder made elsewhere: a host's engine writes
    "local" and the model's path in its work folder; here they read as the host and the local model."""
    folder = Path(folder)
    summary_path, trace_path = folder / "studio_profile.json", folder / "trace_view.json"
    data = json.loads(summary_path.read_text())
    bench = data.get("benchmark", {})
    old = f"{bench.get('tool')} on {bench.get('where')}"
    bench["where"], bench["model"] = where, str(model)
    new = f"{bench.get('tool')} on {where}"
    facts = data.get("facts", {})
    if isinstance(facts.get("benchmark"), str):
        facts["benchmark"] = facts["benchmark"].replace(old, new, 1)
    facts["model"] = str(model)
    data["model"] = str(model)
    summary_path.write_text(json.dumps(data, indent=2))
    if trace_path.is_file():
        events = json.loads(trace_path.read_text())
        for event in events:
            if event.get("ph") == "M" and event.get("name") == "process_name":
                event["args"]["name"] = f"Benchmark ({new})"
        trace_path.write_text(json.dumps(events))
