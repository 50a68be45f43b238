"""Compare two msprobe dumps (GPU vs NPU, step vs step, PyTorch vs MindSpore) API by API.

Matching: the same API name first; then, with fuzzy matching (the default), the n-th call of the
same API (its name without the call counter) on each side, so an extra call on one side does not
shift every later pair; an API mapping (``{"Mint.logical_or": "Tensor.__or__"}``: a name of one
framework, then the other's; msprobe's own ``ms_to_pt_api.yaml`` can be given) makes names of two
frameworks meet, on either side; a data mapping
(``{"full.golden.name": "full.target.name"}``) pairs calls by hand first.

Statistics mode (no tensors dumped) is judged by msprobe's own rules, per API call, so a verdict
here is the verdict msprobe gives: for every argument (inputs, parameters, scalars, outputs) the
differences ``target - golden`` of Max, Min, Mean and Norm and the relative error of the norm
``|diff / golden|``; then

* error: a NaN or infinity in the target's max or min where the golden side has none; a dtype,
  shape or ``requires_grad`` that differs; a scalar argument that differs; an output whose norm
  relative error is over 0.5 while no input's is over 0.1 (the call itself went wrong);
* warning: the outputs' largest norm relative error is over 10 times the inputs' (or over 0.1
  when the inputs match exactly).

Calls that only move or allocate data (``to``, ``empty``, ``numpy`` ...) are not judged, and
collectives that scatter or gather are judged on their outputs only. MD5 mode compares checksums.
The first API that does not pass is named with its stack, and every module gets its failing calls.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.serial import to_json
from studio.tools.accuracy.msprobe_dump import STAT_KEYS, ApiCall, MsprobeDump, TensorStat

IN_THRESHOLD, OUT_THRESHOLD, WARN_RATIO = 0.1, 0.5, 10.0
PASS, WARNING, ERROR = "pass", "warning", "error"
_LEVEL = {PASS: 0, WARNING: 1, ERROR: 2}
# msprobe's lists: calls not judged at all, and calls judged on their outputs only
IGNORED_APIS = {"empty", "empty_like", "numpy", "to", "__setitem__", "empty_with_format", "new_empty_strided",
                "new_empty", "empty_strided"}
OUTPUT_ONLY_APIS = {"_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv"}


@dataclass
class TensorRow:
    """One pair of arguments: slots, dtypes, shapes, the four differences, the norm's relative error
    and the verdict with its reasons."""

    golden_api: str
    target_api: str
    slot: str
    golden_dtype: str
    target_dtype: str
    golden_shape: list | None
    target_shape: list | None
    diffs: dict[str, float | None]
    norm_relative: float | None   # None where the golden norm is 0 or absent
    result: str = PASS
    messages: list[str] = field(default_factory=list)
    is_output: bool = False

    @property
    def message(self) -> str:
        """Every reason of the verdict, in one line."""
        return "; ".join(self.messages)

    def flag(self, level: str, message: str) -> None:
        """Raise the verdict to ``level`` (never lower it) and add the reason."""
        if _LEVEL[level] > _LEVEL[self.result]:
            self.result = level
        self.messages.append(message)

    # studio.core.serial: a row of the JSON holds the reasons in one line
    __json_skip__ = ("messages", "is_output")
    __json_extra__ = ("message",)


@dataclass
class MsprobeComparison:
    """The whole comparison: pairs, what matched nothing, the first mismatch and the module tree."""

    golden: MsprobeDump
    target: MsprobeDump
    rows: list[TensorRow]
    pairs: list[tuple[ApiCall, ApiCall]]
    unmatched_golden: list[str]
    unmatched_target: list[str]
    modules: list[dict] = field(default_factory=list)

    @property
    def first_mismatch(self) -> dict | None:
        """The first API (target call order) that does not pass, and its module and stack."""
        calls = self.target.by_name()
        for row in self.rows:
            if row.result != PASS:
                call = calls.get(row.target_api)
                return {"api": row.target_api, "golden_api": row.golden_api, "slot": row.slot,
                        "result": row.result, "norm_relative": row.norm_relative, "message": row.message,
                        "module": call.module if call else None, "stack": call.stack if call else []}
        return None

    def __bool__(self) -> bool:
        return all(r.result == PASS for r in self.rows)

    def __json__(self) -> dict:
        """The ``studio compare A/dump.json B/dump.json --json`` form (:func:`studio.core.serial.to_json`)."""
        counts = {s: sum(1 for r in self.rows if r.result == s) for s in (PASS, WARNING, ERROR)}
        return {"format": "msprobe", "golden": str(self.golden.path), "target": str(self.target.path),
                "task": self.target.task, "frameworks": [self.golden.framework, self.target.framework],
                "apis_matched": len(self.pairs), "rows_compared": len(self.rows), **counts,
                "unmatched_golden": self.unmatched_golden, "unmatched_target": self.unmatched_target,
                "first_mismatch": self.first_mismatch, "modules": self.modules,
                "rows": self.rows}

    def __str__(self) -> str:
        data = to_json(self)
        lines = [f"msprobe {self.target.task} dumps ({self.golden.framework} golden, {self.target.framework} target): "
                 f"{data['apis_matched']} APIs matched ({len(self.unmatched_golden)} golden-only, "
                 f"{len(self.unmatched_target)} target-only), {data['rows_compared']} arguments: {data['pass']} pass, "
                 f"{data['warning']} warning, {data['error']} error"]
        first = data["first_mismatch"]
        if first is None:
            lines.append("no mismatch")
        else:
            lines.append(f"first mismatch: {first['api']} {first['slot']} ({first['result']})"
                         + (f" in {first['module']}" if first["module"] else "") + f": {first['message']}")
            for frame in first["stack"][:4]:
                lines.append(f"    {frame.splitlines()[0]}")
        for module in self.modules[:8]:
            lines.append(f"  module {module['module']}: {module['errors']} error(s), {module['warnings']} "
                         f"warning(s), first in {module['api']}")
        return "\n".join(lines)


def read_name_mapping(path: Path | None) -> dict[str, str]:
    """A JSON (or simple ``a: b`` YAML) file of name pairs."""
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"Cannot read the mapping file ({exc.strerror})", path, "Check the path.") from exc
    try:
        data = json.loads(text)
    except ValueError:
        data = {}
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            left, sep, right = line.partition(":")
            if not sep or not left.strip() or not right.strip():
                raise UserError("Not a mapping line (name: name)", f"{path}, line {number}",
                                'Write one "golden_name: target_name" per line, or a JSON object.')
            data[left.strip().strip("'\"")] = right.strip().strip("'\"")
    if not isinstance(data, dict):
        raise UserError("The mapping file must hold an object of name pairs", path, 'Write {"a": "b", ...}.')
    return {str(k): str(v) for k, v in data.items()}


def match_calls(golden: MsprobeDump, target: MsprobeDump, data_mapping: dict[str, str] | None = None,
                api_mapping: dict[str, str] | None = None, fuzzy: bool = True) -> tuple[list, list, list]:
    """(pairs in target order, golden-only names, target-only names)."""
    g_by, t_by = golden.by_name(), target.by_name()
    pairs: dict[str, str] = {}  # target name -> golden name
    for g_name, t_name in (data_mapping or {}).items():
        if g_name in g_by and t_name in t_by:
            pairs[t_name] = g_name
    used = set(pairs.values())
    for name in t_by:
        if name not in pairs and name in g_by and name not in used:
            pairs[name] = name
            used.add(name)
    if fuzzy:
        # The API mapping is read both ways: a name of either framework becomes the mapping's right side.
        canonical = dict(api_mapping or {})

        def key(call: ApiCall) -> str:
            base = call.base
            for source, dest in canonical.items():
                if base == source or base.startswith(source + "."):
                    return dest + base[len(source):]
            return base

        queues: dict[str, list[str]] = {}
        for call in golden.calls:
            if call.name not in used:
                queues.setdefault(key(call), []).append(call.name)
        for call in target.calls:
            if call.name in pairs:
                continue
            queue = queues.get(key(call))
            if queue:
                pairs[call.name] = queue.pop(0)
                used.add(pairs[call.name])
    ordered = [(g_by[pairs[c.name]], c) for c in target.calls if c.name in pairs]
    return (ordered, [c.name for c in golden.calls if c.name not in used],
            [c.name for c in target.calls if c.name not in pairs])


def compare_msprobe(golden_path: Path, target_path: Path, data_mapping: Path | None = None,
                    api_mapping: Path | None = None, fuzzy: bool = True) -> MsprobeComparison:
    """Read and compare two msprobe dumps (see the module docstring)."""
    from studio.tools.accuracy.msprobe_dump import read_msprobe

    golden, target = read_msprobe(golden_path), read_msprobe(target_path)
    pairs, only_golden, only_target = match_calls(golden, target, read_name_mapping(data_mapping),
                                                  read_name_mapping(api_mapping), fuzzy)
    rows = []
    for g_call, t_call in pairs:
        g_slots = {_slot(t.slot, g_call.name): t for t in g_call.tensors}
        pairs_of_call = [(g_slots[_slot(t.slot, t_call.name)], t) for t in t_call.tensors
                         if _slot(t.slot, t_call.name) in g_slots]
        call_rows = [_row(g_call.name, t_call.name, g, t) for g, t in pairs_of_call]
        _judge(t_call, call_rows, pairs_of_call, across=golden.framework != target.framework)
        rows += call_rows
    result = MsprobeComparison(golden, target, rows, pairs, only_golden, only_target)
    result.modules = _module_tree(target, rows)
    return result


def _slot(slot: str, api: str) -> str:
    return slot[len(api) + 1:] if slot.startswith(api + ".") else slot


def _row(g_api: str, t_api: str, golden: TensorStat, target: TensorStat) -> TensorRow:
    diffs = {}
    for key in STAT_KEYS:
        g, t = golden.stats.get(key), target.stats.get(key)
        diffs[key] = t - g if g is not None and t is not None else None
    g_norm, diff = golden.stats.get("Norm"), diffs.get("Norm")
    relative = abs(diff / g_norm) if diff is not None and g_norm and not math.isnan(diff) else None
    return TensorRow(g_api, t_api, _slot(target.slot, t_api), golden.dtype, target.dtype,
                     list(golden.shape) if golden.shape is not None else None,
                     list(target.shape) if target.shape is not None else None, diffs, relative,
                     is_output=target.is_output)


def _bad(value: float | None) -> bool:
    return value is not None and not math.isfinite(value)


def same_dtype(golden: str, target: str, across: bool) -> bool:
    """Equal dtypes; across frameworks, ``torch.bfloat16`` and MindSpore's ``BFloat16`` are the same."""
    if not across:
        return golden == target

    def plain(name: str) -> str:
        return name.lower().removeprefix("torch.").removeprefix("mindspore.")

    return plain(golden) == plain(target)


def _judge(call: ApiCall, rows: list[TensorRow], pairs: list[tuple[TensorStat, TensorStat]],
           across: bool = False) -> None:
    """msprobe's statistics checkers over one call's rows (see the module docstring); ``across``:
    the dumps come from two frameworks, whose dtype names differ."""
    parts = call.name.split(".")
    api = parts[1] if len(parts) > 1 else call.name
    if api in IGNORED_APIS:
        return
    output_only = api in OUTPUT_ONLY_APIS
    for row, (g, t) in zip(rows, pairs):
        if output_only and not row.is_output:
            continue
        if g.md5 is not None and t.md5 is not None and g.md5 != t.md5:
            row.flag(ERROR, "MD5 of the target differs from the golden side")
        if not (_bad(g.stats["Max"]) or _bad(g.stats["Min"])) and (_bad(t.stats["Max"]) or _bad(t.stats["Min"])):
            row.flag(ERROR, "NaN or infinity in the target's max or min, not on the golden side")
        if g.requires_grad is not None and t.requires_grad is not None and g.requires_grad != t.requires_grad:
            row.flag(ERROR, "requires_grad differs")
        if not same_dtype(g.dtype, t.dtype, across):
            row.flag(ERROR, f"dtype {t.dtype} on the target, {g.dtype} on the golden side")
        if g.shape != t.shape:
            row.flag(ERROR, f"shape {row.target_shape} on the target, {row.golden_shape} on the golden side")
        if not row.is_output and t.scalar and g.scalar and t.value != g.value:
            row.flag(ERROR, f"scalar argument {t.value!r} on the target, {g.value!r} on the golden side")
    if output_only:
        return
    inputs = [r for r in rows if not r.is_output]
    outputs = [r for r in rows if r.is_output]
    in_max = max((r.norm_relative for r in inputs if r.norm_relative is not None), default=0.0)
    out_max = max((r.norm_relative for r in outputs if r.norm_relative is not None), default=0.0)
    if in_max < IN_THRESHOLD:
        for row in outputs:
            if row.norm_relative is not None and row.norm_relative > OUT_THRESHOLD:
                row.flag(ERROR, f"the output's norm differs by {row.norm_relative:.1%} while no input's differs by "
                                f"{IN_THRESHOLD:.0%}: this call went wrong")
    if outputs and ((in_max == 0 and out_max > IN_THRESHOLD) or (in_max > 0 and out_max / in_max > WARN_RATIO)):
        outputs[0].flag(WARNING, f"the output's norm error ({out_max:.2%}) is over {WARN_RATIO:.0f} times the "
                                 f"inputs' ({in_max:.2%}): double check this call")


def _module_tree(dump: MsprobeDump, rows: list[TensorRow]) -> list[dict]:
    """Each module (construct.json) holding calls that did not pass: counts and the first such call."""
    tree: dict[str, dict] = {}
    seen: set[tuple[str, str]] = set()
    for row in rows:
        if row.result == PASS or (row.target_api, row.result) in seen:
            continue
        seen.add((row.target_api, row.result))
        for module in dump.module_path(row.target_api):
            entry = tree.setdefault(module, {"module": module, "errors": 0, "warnings": 0, "api": row.target_api,
                                             "depth": len(dump.module_path(module))})
            entry["errors" if row.result == ERROR else "warnings"] += 1
    return sorted(tree.values(), key=lambda m: (-m["errors"], -m["warnings"], m["depth"], m["module"]))
