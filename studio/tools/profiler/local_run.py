"""Profile an ONNX model locally with ONNX Runtime, like ``msame --loop`` plus msprof.

Two phases in one ONNX Runtime session. The profiled phase: K warm-ups then N iterations with
ORT's profiler on, sampling the process's CPU and memory. Then the profiler is stopped and the
timing phase runs K warm-ups and N iterations again with it off, as ``studio bench`` does: ORT's
profiler records every node, which for a sub-millisecond model makes each run several times
slower (a voice-activity model: 0.37 ms profiled, 0.05 ms bare). The latency reported is the
timing phase's; the profiled phase's is kept beside it, and the op times in the trace are the
profiled phase's. The profiler's overhead is measured in **alternating rounds** (:mod:`overhead`):
the measured iterations are split into blocks, and after (or before) each block a second session
of the model, without the profiler, runs as many times; each round gives a ratio of medians, and
the overhead is their geometric mean with a t-interval. One pair of phases said "5.7x slower"
and -78 % on a loaded machine. The folder written is one the profiler opens
(``studio.core.formats`` knows it by its ``studio_profile.json``):

* ``trace_view.json`` — one Chrome trace: ORT session phases and per-node kernel slices, the
  run's own ranges (``studio.core.profile`` annotations: session, warm-up, each iteration) and counter
  tracks for CPU % and RSS;
* ``op_summary.csv`` / ``op_statistic.csv`` — msprof-style columns over the measured iterations;
* ``studio_profile.json`` — latency mean/p50/p90/p99 with the profiler off and on, the overhead,
  every run's latency, throughput, the input shapes used, host facts;
* ``onnxruntime_profile.json`` — ORT's own file, untouched.

A dynamic input dimension needs a size from the user (``shapes``) or the input's data (``inputs``);
a run that fails leaves no ORT profile file behind (and no folder, when it made the folder).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import platform
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import studio.core.profile as annotations
from studio.core.errors import ToolUnavailable, UserError
from studio.core.output_lock import output_lock
from studio.core import ab, ort_providers
from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json
from studio.core.ort_session import declared_outputs, output_shape_warnings
from studio.tools.profiler.local_inputs import InputUsed, feed_inputs
from studio.tools.profiler import overhead as overhead_rounds
from studio.tools.profiler.cpu_lane import cpu_lane
from studio.tools.profiler.ort_errors import ort_message

COUNTER_PID = 2
SAMPLE_S = 0.005
TIMING = ("latency_ms: the same session timed after the profiled runs with its profiler stopped; "
          "profiled_latency_ms: the profiled runs")



@dataclass
class RunResult:
    """What a local profiling run measured (times in milliseconds).

    ``latencies_ms`` are the timing phase's runs (profiler off): the model's latency.
    ``profiled_latencies_ms`` are the profiled phase's, whose op times the trace holds."""

    folder: Path
    model: Path
    iterations: int
    warmup: int
    latencies_ms: list[float] = field(default_factory=list)
    inputs: dict[str, InputUsed] = field(default_factory=dict)  # what each model input was fed
    warnings: list[str] = field(default_factory=list)  # a cast input, an output shape the model declares wrongly
    profiled_latencies_ms: list[float] = field(default_factory=list)
    overhead_change: ab.Change | None = None  # profiler on / off, from alternating rounds (None: too few)
    overhead_on_ms: list[list[float]] = field(default_factory=list)  # each round's profiled runs
    overhead_off_ms: list[list[float]] = field(default_factory=list)  # each round's runs without the profiler

    # studio.core.serial: the derived keys of ``studio profile run --json``
    __json_extra__ = {"latency_ms": "latency", "throughput_per_s": "throughput",
                      "profiled_latency_ms": "profiled_latency", "profiler_overhead": "overhead", "timing": "timing"}
    timing = TIMING  # how the two latencies were taken, written with the result

    def latency(self) -> dict[str, float]:
        """mean, p50, p90, p99, min, max of the timed iterations, profiler off (ms)."""
        return latency_stats(self.latencies_ms)

    def profiled_latency(self) -> dict[str, float]:
        """The same over the profiled iterations (profiler on)."""
        return latency_stats(self.profiled_latencies_ms)

    @property
    def overhead(self) -> float | None:
        """What the profiler adds to a run, from the alternating rounds: their geometric mean of
        ratios of medians (on / off) - 1; None when too few iterations made too few rounds."""
        return self.overhead_change.ratio - 1.0 if self.overhead_change is not None else None

    @property
    def throughput(self) -> float:
        """Inferences per second over the timed iterations (profiler off)."""
        total = sum(self.latencies_ms)
        return len(self.latencies_ms) / (total / 1000.0) if total else 0.0

    def report(self) -> str:
        """The msame-style summary printed by ``studio profile run``."""
        lat, on = self.latency(), self.profiled_latency()
        inputs = "".join(f"input {name}: {used.describe()}\n" for name, used in self.inputs.items())
        lines = [f"profiled {self.model.name}: {self.iterations} iterations after {self.warmup} warm-ups, "
                 "then timed again with the profiler off",
                 inputs.rstrip("\n"),
                 "latency (ms), profiler off: " + _stats_text(lat)]
        if on:
            lines.append("latency (ms), profiler on:  " + _stats_text(on))
            lines.append(overhead_rounds.describe(self.overhead_change, self.iterations))
        lines += [f"throughput: {self.throughput:.1f} inferences/s (profiler off)"]
        lines += [f"warning: {w}" for w in self.warnings]
        lines += [f"written to {self.folder}"]
        return "\n".join(line for line in lines if line)


def latency_stats(latencies_ms: list[float]) -> dict[str, float]:
    """mean, p50, p90, p99, min, max of some latencies (ms); empty for none."""
    lat = np.array(latencies_ms, dtype=np.float64)
    if not lat.size:
        return {}
    return {"mean": float(lat.mean()), "p50": float(np.percentile(lat, 50)),
            "p90": float(np.percentile(lat, 90)), "p99": float(np.percentile(lat, 99)),
            "min": float(lat.min()), "max": float(lat.max())}


def _stats_text(lat: dict[str, float]) -> str:
    return "  ".join(f"{key} {lat[key]:.3f}" for key in ("mean", "p50", "p90", "p99", "min", "max"))


def profile_model(model: Path, out: Path, iterations: int = 20, warmup: int = 3,
                  inputs: dict[str, Path] | None = None, seed: int = 0,
                  cancel: CancelToken | None = None, shapes: dict[str, list[int]] | None = None,
                  ) -> Generator[Progress, None, RunResult]:
    """Run and profile ``model``; writes ``out`` (created) and returns the measured numbers.

    ``inputs`` gives .npy files by input name, ``shapes`` the shapes of the seeded random data
    for inputs with dynamic dims (both required for dynamic dims; nothing is set to 1 silently).
    """
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ToolUnavailable("local profiling", "onnxruntime is not installed", "pip install onnxruntime") from exc
    model, out = Path(model), Path(out)
    if not model.is_file():
        raise UserError("Model not found", model, "Give the path of an .onnx model.")
    if iterations < 1 or warmup < 0:
        raise UserError("Iterations must be >= 1 and warm-ups >= 0", f"--iterations {iterations} --warmup {warmup}",
                        "Use e.g. --iterations 20 --warmup 3.")
    made_folder = out
    while not made_folder.parent.exists() and made_folder.parent != made_folder:
        made_folder = made_folder.parent  # the outermost folder this run creates
    made_folder = made_folder if not made_folder.exists() else None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"Cannot create the output folder: {exc.strerror}", out, "Choose a folder you can write.") from exc
    with output_lock(out, "profile"):  # a second profile into the same folder would mix the two
        before = set(out.iterdir())
        result = RunResult(out, model, iterations, warmup)
        try:
            rec, sampler, origin_ns, ort_file = yield from _run(ort, model, out, result, inputs or {}, shapes or {},
                                                                seed, cancel)
        except BaseException:
            _clean_failed_run(out, before, made_folder)
            raise
        raw_path = out / "onnxruntime_profile.json"
        ort_file.replace(raw_path)
        yield Progress(0.92, "writing the trace and summaries")
        ort_events = json.loads(raw_path.read_text())
        first_measured = _first_measured_ns(rec, warmup)
        write_outputs(out, model, ort_events, rec, sampler, origin_ns, first_measured, result)
    yield Progress(1.0, f"profile written to {out}")
    return result


def _run(ort, model: Path, out: Path, result: RunResult, inputs: dict[str, Path], shapes: dict[str, list[int]],
         seed: int, cancel: CancelToken | None):
    """Load, feed and time the model with ORT's profiler on; returns what write_outputs needs."""
    sampler = _Sampler()
    session = None
    ort_file = None
    warmup, iterations = result.warmup, result.iterations
    with annotations.recording() as rec:
        try:
            yield Progress(0.0, f"loading {model.name}")
            options = ort.SessionOptions()
            options.enable_profiling = True
            options.profile_file_prefix = str(out / "ort")
            options.log_severity_level = 4  # ORT's own log lines would duplicate the errors raised below
            sampler.start()
            with annotations.range("create session"):
                try:
                    session = ort.InferenceSession(str(model), options, providers=ort_providers.chosen())
                except Exception as exc:  # ORT raises its own types for bad models
                    from studio.core.model_files import check_external_data

                    check_external_data(model)  # a missing weights file, said as every command says it
                    raise UserError(f"ONNX Runtime cannot load the model: {ort_message(exc)}", model,
                                    f"Check the model: studio info {model}") from exc
            ort_providers.check(session)
            origin_ns = session.get_profiling_start_time_ns()
            feeds, result.inputs = feed_inputs(session, inputs, seed, shapes, model, result.warnings)
            blocks = overhead_rounds.blocks(iterations)
            if blocks:  # a second session without the profiler, for the overhead's alternating rounds
                with annotations.range("create session, profiler off"):
                    bare = ort.InferenceSession(str(model), _plain_options(ort), providers=ort_providers.chosen())
            total = 2 * (warmup + iterations) + (warmup + iterations if blocks else 0)
            done = 0
            for i in range(warmup):
                with annotations.range(f"warm-up {i + 1}"):
                    _ms, outputs = _timed_run(session, feeds, model, cancel)
                if i == 0:  # once, not per run as ORT would (its warnings are off here)
                    result.warnings += output_shape_warnings(declared_outputs(model),
                                                             [o.name for o in session.get_outputs()], outputs)
                done += 1
                yield Progress(done / total * 0.9, f"warm-up {i + 1}")
            if blocks:
                with annotations.range("warm-up, profiler off"):
                    for _ in range(max(1, warmup)):
                        _timed_run(bare, feeds, model, cancel)
            on_rounds, off_rounds = [], []
            for r, block in enumerate(blocks or [range(iterations)]):
                on, off = [], []
                if blocks and r % 2:  # alternate the order, so neither side always runs second
                    with annotations.range(f"round {r + 1}, profiler off"):
                        off = [_timed_run(bare, feeds, model, cancel)[0] for _ in block]
                for n in block:
                    with annotations.range(f"iteration {n + 1}"):
                        ms, outputs = _timed_run(session, feeds, model, cancel)
                    if warmup == 0 and n == 0:
                        result.warnings += output_shape_warnings(declared_outputs(model),
                                                                 [o.name for o in session.get_outputs()], outputs)
                    on.append(ms)
                    done += 1
                    yield Progress(done / total * 0.9, f"iteration {n + 1}")
                if blocks and not r % 2:
                    with annotations.range(f"round {r + 1}, profiler off"):
                        off = [_timed_run(bare, feeds, model, cancel)[0] for _ in block]
                result.profiled_latencies_ms += on
                on_rounds.append(on)
                off_rounds.append(off)
            if blocks:
                bare = None
                result.overhead_change = overhead_rounds.measure(off_rounds, on_rounds)
                result.overhead_on_ms, result.overhead_off_ms = on_rounds, off_rounds
            annotations.mark("end of run")
            ort_file = Path(session.end_profiling())
            sampler.stop()
            # The same session with its profiler stopped: what the model costs without the
            # per-node recording (which, for a small model, is most of a profiled run).
            with annotations.range("timing, profiler off"):
                for i in range(warmup + iterations):
                    ms, _outputs = _timed_run(session, feeds, model, cancel)
                    if i >= warmup:
                        result.latencies_ms.append(ms)
                    done = warmup + iterations + i + 1
                    if (i + 1) % max(1, (warmup + iterations) // 20) == 0 or i + 1 == warmup + iterations:
                        yield Progress(done / total * 0.9, f"timing {i + 1}/{warmup + iterations}, profiler off")
            session = None
        finally:
            sampler.stop()
            if session is not None and ort_file is None:  # failed or cancelled: close ORT's profile now, so it can be removed
                try:
                    session.end_profiling()
                except Exception:  # noqa: BLE001 - best effort; the file is removed below either way
                    pass
            del session
    return rec, sampler, origin_ns, ort_file


def _plain_options(ort):
    options = ort.SessionOptions()
    options.log_severity_level = 4
    return options


def _timed_run(session, feeds: dict, model: Path, cancel: CancelToken | None) -> tuple[float, list]:
    """One ``session.run``: (ms, outputs); an inference error is the user's to fix."""
    if cancel:
        cancel.raise_if_cancelled()
    t0 = time.perf_counter_ns()
    try:
        outputs = session.run(None, feeds)
    except Exception as exc:
        raise UserError(f"Inference failed: {ort_message(exc)}", model,
                        "Check the inputs' shapes and dtypes (--input-shape NAME=D1,D2,...); inputs "
                        "whose values matter (a sample rate, token ids, a state) need real data: "
                        "--input NAME=FILE.npy.") from exc
    return (time.perf_counter_ns() - t0) / 1e6, outputs


def _clean_failed_run(out: Path, before: set[Path], made_folder: Path | None) -> None:
    """Remove what a failed run wrote: ORT's profile files, and the folder when the run made it."""
    import gc
    import shutil

    gc.collect()  # a session that failed to load writes its (empty) profile when it is collected
    for path in set(out.iterdir()) - before if out.is_dir() else ():
        if path.name.startswith("ort_") and path.suffix == ".json" or path.name == "onnxruntime_profile.json":
            path.unlink(missing_ok=True)
    if made_folder is not None and out.is_dir() and not any(out.iterdir()):
        shutil.rmtree(made_folder, ignore_errors=True)  # only folders this run created, all empty


def _first_measured_ns(rec: annotations.Recorder, warmup: int) -> int:
    starts = [start for name, start, end, _ in rec.events if name == "iteration 1"]
    return starts[0] if starts else 0


def write_outputs(out: Path, model: Path, ort_events: list[dict], rec: annotations.Recorder,
                  sampler: _Sampler, origin_ns: int, first_measured_ns: int, result: RunResult) -> None:
    """Write trace_view.json, the CSV summaries and studio_profile.json."""
    pid = os.getpid()
    meta = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "ONNX Runtime"}},
        {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_name", "pid": COUNTER_PID, "tid": 0, "args": {"name": "Process (CPU, memory)"}},
        {"ph": "M", "name": "process_sort_index", "pid": COUNTER_PID, "tid": 0, "args": {"sort_index": 99}},
    ]
    for tid in sorted({e.get("tid") for e in ort_events if e.get("pid") == pid}):
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                     "args": {"name": "session thread" if tid == pid else f"Thread {tid}"}})
    counters = []
    for t_ns, cpu in cpu_lane([(t, cpu_s) for t, cpu_s, _ in sampler.samples]):
        counters.append({"ph": "C", "name": "CPU", "pid": COUNTER_PID, "tid": 0, "ts": (t_ns - origin_ns) / 1000.0,
                         "args": {"%": cpu}})
    for t_ns, _cpu_s, rss in sampler.samples:
        counters.append({"ph": "C", "name": "Memory", "pid": COUNTER_PID, "tid": 0, "ts": (t_ns - origin_ns) / 1000.0,
                         "args": {"RSS MiB": rss}})
    trace = meta + ort_events + rec.chrome_events(origin_ns)[0:] + counters
    (out / "trace_view.json").write_text(json.dumps(trace))
    measured_from_us = (first_measured_ns - origin_ns) / 1000.0
    kernels = [e for e in ort_events if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time")
               and e.get("ts", 0) >= measured_from_us]
    _write_op_summary(out / "op_summary.csv", kernels, origin_ns)
    _write_op_statistic(out / "op_statistic.csv", kernels)
    summary = {
        "model": os.path.relpath(model.resolve(), out.resolve()),
        "iterations": result.iterations, "warmup": result.warmup,
        "latency_ms": result.latency(), "throughput_per_s": result.throughput,
        "latencies_ms": result.latencies_ms,
        "timing": TIMING,
        "profiled_latency_ms": result.profiled_latency(), "profiled_latencies_ms": result.profiled_latencies_ms,
        "profiler_overhead": result.overhead,
        "profiler_overhead_change": to_json(result.overhead_change),
        "profiler_overhead_rounds_ms": {"on": result.overhead_on_ms, "off": result.overhead_off_ms},
        "inputs": to_json(result.inputs),
        "warnings": result.warnings,
        "facts": host_facts(model, result),
    }
    (out / "studio_profile.json").write_text(json.dumps(summary, indent=2))


def host_facts(model: Path, result: RunResult) -> dict[str, str]:
    """Host facts for the analysis summary."""
    import onnxruntime as ort

    lat = result.latency()
    return {
        "model": model.name,
        "collection time": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "host": platform.node(), "os": f"{platform.system()} {platform.release()}",
        "cpu": platform.processor() or platform.machine(), "cpu cores": str(os.cpu_count()),
        "python": platform.python_version(), "onnxruntime": ort.__version__,
        "device": ort_providers.describe(),
        **{f"input {name}": used.describe() for name, used in result.inputs.items()},
        "iterations": f"{result.iterations} (+{result.warmup} warm-ups), profiled, then timed with the profiler off",
        "latency mean / p50 / p90 / p99": " / ".join(f"{lat[k]:.3f} ms" for k in ("mean", "p50", "p90", "p99"))
                                          + " (profiler off)",
        **profiled_facts(result),
        "throughput": f"{result.throughput:.1f} inferences/s (profiler off)",
    }


def profiled_facts(result: RunResult) -> dict[str, str]:
    """The profiled phase's latency and the profiler's overhead, for the Summary tab."""
    on = result.profiled_latency()
    if not on:
        return {}
    facts = {"latency with the profiler on, mean / p50": f"{on['mean']:.3f} ms / {on['p50']:.3f} ms "
                                                         "(the runs the op times come from)"}
    facts["profiler overhead"] = overhead_rounds.describe(result.overhead_change, result.iterations).split(": ", 1)[1]
    return facts


_SUMMARY_COLUMNS = ["Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "Task Type",
                    "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Input Shapes",
                    "Input Data Types", "Output Shapes", "Output Data Types"]


def _shapes(items: list) -> tuple[str, str]:
    shapes, types = [], []
    for item in items or []:
        for dtype, shape in (item or {}).items():
            types.append(dtype.upper())
            shapes.append(",".join(str(d) for d in shape))
    return ";".join(shapes), ";".join(types)


def _write_op_summary(path: Path, kernels: list[dict], origin_ns: int) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(_SUMMARY_COLUMNS)
        previous_end = None
        for task_id, e in enumerate(kernels):
            args = e.get("args", {})
            in_shapes, in_types = _shapes(args.get("input_type_shape"))
            out_shapes, out_types = _shapes(args.get("output_type_shape"))
            start_us = origin_ns / 1000.0 + e["ts"]
            wait = max(0.0, e["ts"] - previous_end) if previous_end is not None else 0.0
            previous_end = e["ts"] + e.get("dur", 0)
            writer.writerow(["cpu", 0, task_id, e.get("tid", 0), e["name"][:-len("_kernel_time")],
                             args.get("op_name", ""), args.get("provider", "CPU"), f"{start_us:.3f}\t",
                             e.get("dur", 0), wait, in_shapes, in_types, out_shapes, out_types])


def _write_op_statistic(path: Path, kernels: list[dict]) -> None:
    """msprof's op_statistic columns by op type, plus ``Self Time(us)``: a kernel's time minus the
    kernels it ran inside it (an If or Loop runs its subgraph's kernels within its own slice), so
    ``Ratio(%)`` (of self time) adds up to 100 and agrees with ``studio profile stats``."""
    from studio.tools.profiler.stats import nested_self_time

    selfs = nested_self_time(np.array([float(e.get("ts", 0)) for e in kernels]),
                             np.array([float(e.get("dur", 0)) for e in kernels]),
                             np.array([int(e.get("tid", 0)) for e in kernels], dtype=np.int64))
    by_type: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for e, own in zip(kernels, selfs):
        args = e.get("args", {})
        durs, owns = by_type.setdefault((args.get("op_name", "?"), args.get("provider", "CPU")), ([], []))
        durs.append(float(e.get("dur", 0)))
        owns.append(float(own))
    grand = float(selfs.sum()) or 1.0
    rows = sorted(by_type.items(), key=lambda kv: (-sum(kv[1][1]), kv[0]))
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                         "Max Time(us)", "Ratio(%)", "Self Time(us)"])
        for (op_type, core), (durs, owns) in rows:
            total = sum(durs)
            writer.writerow([op_type, core, len(durs), f"{total:.3f}", f"{min(durs):.3f}",
                             f"{total / len(durs):.3f}", f"{max(durs):.3f}", f"{sum(owns) / grand * 100:.3f}",
                             f"{sum(owns):.3f}"])


class _Sampler:
    """Samples this process's cumulative CPU time (user + system, seconds) and RSS on a thread while
    the model runs; :func:`cpu_lane` turns the CPU time into a rate it can resolve."""

    def __init__(self) -> None:
        self.samples: list[tuple[int, float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            import psutil
        except ImportError:
            return  # counters are a bonus; the run goes on without them
        process = psutil.Process()

        def take() -> None:
            used = process.cpu_times()
            self.samples.append((time.time_ns(), used.user + used.system, process.memory_info().rss / 2**20))

        def sample() -> None:
            take()  # one at the start and one at the end, however short the run
            while not self._stop.wait(SAMPLE_S):
                take()
            take()

        self._thread = threading.Thread(target=sample, name="studio-profile-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

