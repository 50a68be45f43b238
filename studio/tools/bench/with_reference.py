"""An .om timed on its target next to the original .onnx timed here with ONNX Runtime.

The GUI's "Benchmark .om…" with an original model and ``studio bench MODEL.om --compare-with
MODEL.onnx`` both run this (through :mod:`studio.ops.bench_om`): the same loops and warm-ups on
both sides, the .om with msame / ais_bench where the target says, the .onnx with
:func:`studio.tools.bench.ort_bench.bench_model` on this computer (seeded random inputs of the sizes given; dynamic dims must be given). Each side
can be written as a folder the profiler opens; its Compare tab puts the two side by side.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.serial import from_json, to_json
from studio.tools.bench.result import BenchResult, compare_rows, sample_change


@dataclass
class BenchPair:
    """The .om's result and, when an original model was given, ONNX Runtime's result here."""

    npu: BenchResult
    reference: BenchResult | None = None

    @property
    def folder(self):
        """The .om result's profiler folder (None when not written)."""
        return self.npu.folder

    def rows(self) -> list[dict]:
        """Per-figure rows, ONNX Runtime here as the baseline, the .om as the new side."""
        return compare_rows(self.reference, self.npu) if self.reference is not None else []

    def change(self):
        """The .om's latency against ONNX Runtime's, with its confidence interval (an
        :class:`studio.core.ab.Change`), from their per-loop times; None when a side has none."""
        return sample_change(self.reference, self.npu) if self.reference is not None else None

    def __json__(self) -> dict:
        """The .om's JSON keys, plus ``compare_with`` (ONNX Runtime's), ``comparison`` rows and
        ``change`` (the latency's, with its interval; null without per-loop times)."""
        data = to_json(self.npu)
        if self.reference is not None:
            data.update(compare_with=self.reference, comparison=self.rows(), change=self.change())
        return data

    @classmethod
    def __from_json__(cls, data: dict) -> BenchPair:
        """Both results back from the JSON (the comparison and change are derived again)."""
        reference = data.get("compare_with")
        return cls(from_json(BenchResult, data), None if reference is None else from_json(BenchResult, reference))


    def report(self) -> str:
        """The .om's lines, then ONNX Runtime's, then the side-by-side figures."""
        text = self.npu.report()
        if self.reference is None:
            return text
        lines = [text, "", "original model here:", self.reference.report(), "",
                 f"{'figure':<12}{'onnxruntime':>14}{self.npu.tool:>14}{'speed-up':>10}"]
        for row in self.rows():
            lines.append(f"{row['figure']:<12}{_num(row['base']):>14}{_num(row['new']):>14}"
                         f"{('x%.2f' % row['speedup']) if row['speedup'] else 'n/a':>10}")
        change = self.change()
        lines.append(f"latency: {change.describe()}" if change is not None else
                     "latency: not judged (a tool printed no per-loop times: no interval can be given)")
        return "\n".join(lines)


def bench_with_reference(npu_job: Generator[Progress, None, BenchResult], loop: int = 100, warmup: int = 5,
                         out: Path | None = None, reference: Path | None = None, shapes: dict | None = None,
                         reference_out: Path | None = None,
                         cancel: CancelToken | None = None) -> Generator[Progress, None, BenchPair]:
    """Run ``npu_job`` (the .om timed on its target, not started yet; then written to ``out``); with
    ``reference`` also time that model here with ONNX Runtime, the same ``loop`` and ``warmup``
    (written to ``reference_out``, by default ``out``'s name + ``-onnxruntime``)."""
    from studio.tools.bench.profile_folder import write_bench_folder

    sizes = {name: tuple(int(d) for d in dims) for name, dims in (shapes or {}).items()}
    if reference is not None:  # before the host is busy: a missing size is the user's to give
        yield Progress(None, f"reading the inputs of {Path(reference).name}")
        check_reference(Path(reference), sizes)
    npu = yield from npu_job
    for line in npu.report().splitlines():  # the summary, at the end of the console
        yield Progress(None, line)
    if out is not None:
        npu.folder = write_bench_folder(npu, Path(out))  # the profiler's Summary shows it
    pair = BenchPair(npu)
    if reference is None:
        return pair
    from studio.tools.bench.ort_bench import bench_model

    yield Progress(None, f"timing {Path(reference).name} here with ONNX Runtime ({loop} loops, {warmup} warm-ups)")
    pair.reference = yield from bench_model(Path(reference), loop, warmup, None, sizes, cancel=cancel)
    for line in pair.report().splitlines()[len(npu.report().splitlines()):]:
        yield Progress(None, line)
    if out is not None or reference_out is not None:
        folder = Path(reference_out) if reference_out is not None else \
            Path(out).with_name(f"{Path(out).name}-onnxruntime")
        pair.reference.folder = write_bench_folder(pair.reference, folder)
    return pair


def check_reference(reference: Path, sizes: dict[str, tuple[int, ...]]) -> None:
    """Raise UserError unless ``reference`` is an .onnx whose inputs all have a size (dynamic dims
    from ``sizes``; none is set to 1 behind the user's back)."""
    from studio.core.errors import UserError
    from studio.core.model_inputs import resolve_shape, session_specs
    from studio.tools.bench.ort_bench import open_session

    if not reference.is_file():
        raise UserError("Original model not found", reference, "Give the .onnx the .om was converted from.")
    if reference.suffix.lower() != ".onnx":
        raise UserError("The original model must be an .onnx (it is timed here with ONNX Runtime)", reference,
                        "Give the .onnx the .om was converted from.")
    for spec in session_specs(open_session(reference)):
        resolve_shape(spec, sizes)


def _num(value) -> str:
    return "n/a" if value is None else f"{value:,.3f}"
