"""Pair the tensors of two dumps: by normalised op name, through a fusion mapping, never fuzzily.

Order of evidence, strongest first:

1. a mapping ``{"<target op>": ["<golden op>", ...]}`` (``--mapping``; the converter's report
   key ``"node_mapping"``): the target op's output is compared with the output of the *last*
   listed golden op in golden execution order; the other listed ops are shown as fused into it;
2. the original op names an NPU dump records per output (``OpOutput.original_op``);
3. the op name, normalised (msaccucmp replaces ``/`` and ``.`` with ``_``) + output index;
4. the tensor name, normalised (ONNX value names survive renamed nodes).

Whatever is left is shown as golden-only or target-only (e.g. Casts a converter inserted).
Polygraphy's substring / index fallback can silently pair wrong tensors, so there is none here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError
from studio.core.safe_read import load_json
from studio.tools.accuracy.dumpset import DumpSet, TensorEntry


def normalise(name: str) -> str:
    """``encoder1/conv1.Conv`` -> ``encoder1_conv1_conv``."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")


@dataclass
class Pair:
    """One row to be: a golden entry, a target entry, or both, and how they were paired."""

    golden: TensorEntry | None
    target: TensorEntry | None
    how: str  # "mapping", "original op", "name", "tensor name", "golden only", "target only", "fused"
    note: str = ""


def load_mapping(path: Path | str) -> dict[str, list[str]]:
    """Read a converter report (key ``node_mapping``) or a bare ``{converted: [original, ...]}`` JSON."""
    path = Path(path)
    try:
        data = load_json(path, "mapping file")
    except FileNotFoundError as exc:
        raise UserError("Mapping file not found", path, "Check the --mapping path.") from exc
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"Mapping file is not valid JSON ({exc})", path,
                        'Give the converter report or a JSON object {"converted op": ["original op", ...]}.') from exc
    if isinstance(data, dict) and isinstance(data.get("node_mapping"), dict):
        data = data["node_mapping"]
    if not isinstance(data, dict):
        raise UserError("Mapping must be a JSON object", path,
                        'Use {"converted op": ["original op", ...]} or a report with "node_mapping".')
    mapping = {}
    for key, value in data.items():
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UserError(f"Mapping entry {key!r} must be a list of original op names", path,
                            'Write it as "converted": ["original1", "original2"].')
        mapping[str(key)] = value
    return mapping


REPORT_NAMES = ("{name}.report.json", "{stem}.report.json", "{stem}_report.json", "report.json")


def find_converter_report(model: Path | str) -> Path | None:
    """The converter's report next to a converted model, when it has a ``node_mapping``.

    Looked for, in order: ``<model>.report.json``, ``<stem>.report.json``, ``<stem>_report.json``,
    ``report.json`` in the model's folder.
    """
    model = Path(model)
    for pattern in REPORT_NAMES:
        candidate = model.parent / pattern.format(name=model.name, stem=model.stem)
        try:
            if candidate.is_file() and candidate.stat().st_size < 64 << 20:
                data = load_json(candidate, "converter report")
                if isinstance(data, dict) and isinstance(data.get("node_mapping"), dict):
                    return candidate
        except (OSError, ValueError, RecursionError, UserError):
            continue
    return None


def match(golden: DumpSet, target: DumpSet, mapping: dict[str, list[str]] | None = None) -> list[Pair]:
    """Pairs in display order: golden execution order, one-side-only rows where they occur."""
    g_entries = [e for e in golden.entries if e.kind == "output"]
    t_entries = [e for e in target.entries if e.kind == "output"]
    g_by_op: dict[str, list[TensorEntry]] = {}
    for e in g_entries:
        g_by_op.setdefault(normalise(e.op_name), []).append(e)
    # Some exports repeat op names (OpenVINO's "F0::anon" Constants): a key may hold several
    # entries; the one with the same tensor name wins, else the first one not used yet.
    g_keys: dict[tuple[str, int], list[TensorEntry]] = {}
    for e in g_entries:
        g_keys.setdefault((normalise(e.op_name), e.index), []).append(e)
    g_by_tensor = {normalise(e.tensor): e for e in g_entries}
    norm_map = {normalise(k): v for k, v in (mapping or {}).items()}
    used: set[int] = set()
    fused: dict[int, str] = {}
    pairs: list[Pair] = []

    class _ByKey:
        """``g_by_key.get(key)`` for the target entry being matched (see above)."""

        tensor = ""

        def get(self, key):
            free = [e for e in g_keys.get(key, []) if id(e) not in used]
            if len(free) > 1:
                same = [e for e in free if e.tensor == self.tensor]
                if same:
                    return same[0]
            return free[0] if free else None

    g_by_key = _ByKey()

    def take(entry: TensorEntry | None) -> TensorEntry | None:
        if entry is None or id(entry) in used:
            return None
        used.add(id(entry))
        return entry

    for t in t_entries:
        g, how, note = None, "", ""
        g_by_key.tensor = t.tensor
        originals = norm_map.get(normalise(t.op_name))
        if originals:
            group = [e for name in originals for e in g_by_op.get(normalise(name), [])]
            if group:
                last_op = max(group, key=lambda e: e.order).op_name
                g = take(g_by_key.get((normalise(last_op), t.index)) or g_by_key.get((normalise(last_op), 0)))
                for e in group:
                    if e.op_name != last_op:
                        fused[id(e)] = t.op_name
                how, note = "mapping", f"fused from {', '.join(originals)}"
        if g is None and t.original_ops:
            last = t.original_ops[-1]
            g = take(g_by_key.get((normalise(last), t.index)) or g_by_key.get((normalise(last), 0)))
            how, note = ("original op", f"original ops: {', '.join(t.original_ops)}") if g else (how, note)
        if g is None:
            g = take(g_by_key.get((normalise(t.op_name), t.index)))
            how = "name" if g else how
        if g is None:
            g = take(g_by_tensor.get(normalise(t.tensor)))
            how = "tensor name" if g else how
        pairs.append(Pair(g, t, how or "target only", note))

    # Golden-only rows go right after the matched row that precedes them in golden order.
    anchored: list[tuple[float, int, Pair]] = []
    last_order = -1.0
    for position, pair in enumerate(pairs):
        if pair.golden is not None:
            last_order = float(pair.golden.order)
            anchored.append((last_order, position, pair))
        else:
            anchored.append((last_order + 0.5, position, pair))
    for e in g_entries:
        if id(e) in used:
            continue
        if id(e) in fused:
            anchored.append((float(e.order), -1, Pair(e, None, "fused", f"fused into {fused[id(e)]}")))
        else:
            anchored.append((float(e.order), -1, Pair(e, None, "golden only")))
    anchored.sort(key=lambda item: (item[0], item[1] if item[1] >= 0 else -1))
    return [pair for _, _, pair in anchored]
