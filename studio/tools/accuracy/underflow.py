"""FP16 underflow: a value finite and non-zero in FP32 that FP16 flushes to 0 or to a subnormal.

On its own that is harmless; read by ``Log``, ``Div``, ``Sqrt``, ``Pow`` or ``Reciprocal`` it turns
into inf/NaN (``log(1e-10 + 0)`` with the 1e-10 gone: ``-inf``). The op that then holds the
inf/NaN is not the one to fix: keeping it in FP32 still reads the 0. This module finds, for each
such op whose target gained inf/NaN (or a value beyond FP16's range), the input that underflowed
and walks up to the op whose *output* underflows first (its own inputs do not): the one that
makes the tiny value, which must stay in FP32 together with the op that reads it.

The graph comes from the dump: Studio's dumps record the tensors each op reads (``inputs`` in
the manifest); for other dumps, the ONNX model the dump names, when it is there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from studio.tools.accuracy.row import Row
    from studio.tools.accuracy.tensors import DumpSet

SENSITIVE = frozenset({"Log", "Div", "Sqrt", "Pow", "Reciprocal"})
FP16_TINY = 2.0 ** -14  # smallest normal float16 (6.1e-5): below it FP16 holds a subnormal or 0
CHECKED_ROWS = 20       # consumers looked at per comparison (the first ones carry the cause)
MAX_DEPTH = 32          # producers followed upstream


def underflow_mask(golden: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Where the golden value is finite and non-zero and the target's is 0 or subnormal in FP16."""
    g = np.asarray(golden).reshape(-1)
    t = np.asarray(target).reshape(-1)
    with np.errstate(invalid="ignore"):
        return np.isfinite(g) & (g != 0) & np.isfinite(t) & (np.abs(t) < FP16_TINY)


def mark_underflows(rows: list[Row], golden: DumpSet, target: DumpSet, fp16_target: bool, cancel=None) -> None:
    """Set ``row.underflow`` on each op that blows up on an underflowed input (see the module doc)."""
    if not fp16_target:
        return
    from studio.tools.accuracy.advisor import overflows
    from studio.tools.accuracy.tensors import DTYPE_AS_RUN_MODES

    by_tensor = {}
    for row in rows:
        for entry in (row.golden, row.target):
            if entry is not None and entry.tensor and row.golden is not None and row.target is not None:
                by_tensor.setdefault(entry.tensor, row)
    reads = _reads(rows, golden, target)
    if not reads:
        return
    candidates = [r for r in rows if r.metrics is not None and not r.metrics.empty and r.op_type in SENSITIVE
                  and overflows(r, fp16_target, target.mode in DTYPE_AS_RUN_MODES)][:CHECKED_ROWS]
    for row in candidates:
        if cancel is not None:
            cancel.raise_if_cancelled()
        source = _underflowing_input(row, reads, by_tensor, golden, target)
        if source is None:
            continue
        chain = _chain_up(source, reads, by_tensor, golden, target)
        origin = chain[0]
        g_out, t_out = _load(origin, golden, target)
        mask = underflow_mask(g_out, t_out)
        first = int(np.argmax(mask))
        row.underflow = {"op": origin.name, "op_type": origin.op_type, "row": origin.index,
                         "tensor": _tensor(origin), "via": source.name, "chain": [r.name for r in chain] + [row.name],
                         "elements": int(np.count_nonzero(mask)),
                         "size": int(mask.size), "golden": float(g_out.reshape(-1)[first]),
                         "target": float(t_out.reshape(-1)[first])}


def _reads(rows: list[Row], golden: DumpSet, target: DumpSet) -> dict[str, list[str]]:
    """op name -> the tensor names it reads (from the dumps' manifests, else from the model)."""
    reads: dict[str, list[str]] = {}
    for row in rows:
        for entry in (row.target, row.golden):
            if entry is not None and entry.reads:
                reads.setdefault(entry.op_name, list(entry.reads))
    if reads:
        return reads
    for dump in (target, golden):
        if dump.model and str(dump.model).lower().endswith(".onnx"):
            try:
                import onnx

                model = onnx.load(str(dump.model), load_external_data=False)
            except Exception:  # noqa: BLE001 - the model may be gone or not ONNX: no graph, no verdict
                continue
            for index, node in enumerate(model.graph.node):
                reads[node.name or f"{node.op_type}_{index}"] = [i for i in node.input if i]
            return reads
    return reads


def _tensor(row: Row) -> str:
    entry = row.golden or row.target
    return entry.tensor if entry is not None else row.name


def _load(row: Row, golden: DumpSet, target: DumpSet) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(golden.load(row.golden)), np.asarray(target.load(row.target))


def _underflowing_input(row: Row, reads, by_tensor, golden: DumpSet, target: DumpSet) -> Row | None:
    """The producer of an input of ``row`` that underflows where ``row`` went wrong (None: no input does)."""
    g_out, t_out = _load(row, golden, target)
    with np.errstate(invalid="ignore"):
        wrong = (~np.isfinite(t_out) & np.isfinite(g_out)) | (np.abs(t_out) > 65504.0)
    wrong = wrong.reshape(-1)
    for name in reads.get(row.name, []):
        source = by_tensor.get(name)
        if source is None or source is row or source.metrics is None:
            continue
        g_in, t_in = _load(source, golden, target)
        mask = underflow_mask(g_in, t_in)
        if g_in.size == g_out.size:  # element-wise: the underflow must sit where the output went wrong
            mask &= wrong
        if mask.any():
            return source
    return None


def _chain_up(source: Row, reads, by_tensor, golden: DumpSet, target: DumpSet) -> list[Row]:
    """The ops from the first whose output underflows down to ``source``: walk up while one of
    an op's own inputs underflows at the same places."""
    chain = [source]
    seen = {source.name}
    for _ in range(MAX_DEPTH):
        g_out, t_out = _load(source, golden, target)
        here = underflow_mask(g_out, t_out)
        upstream = None
        for name in reads.get(source.name, []):
            producer = by_tensor.get(name)
            if producer is None or producer.name in seen or producer.metrics is None:
                continue
            g_in, t_in = _load(producer, golden, target)
            mask = underflow_mask(g_in, t_in)
            if g_in.size == g_out.size:
                mask &= here
            if mask.any():
                upstream = producer
                break
        if upstream is None:
            break
        seen.add(upstream.name)
        chain.insert(0, upstream)
        source = upstream
    return chain
