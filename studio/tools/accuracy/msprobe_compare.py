"""Compare two msprobe dumps (GPU vs NPU, step vs step, PyTorch vs MindSpore) API by API.

Matching: the same API name first; then, with fuzzy matching (the default), the n-th call of the
same API (its name without the call counter) on each side, so an extra call on one side does not
shift every later pair; an API mapping (``{"Mint.logical_or": "Tensor.__or__"}``: a name of one
framework, then the other's; msprobe's own ``ms_to_pt_api.yaml`` can be given) makes names of two
frameworks meet, on either side; a layer mapping (msprobe's ``-lm`` YAML,
:mod:`studio.tools.accuracy.msprobe_layers`) pairs calls by their place in the module tree, after
the names and before the fuzzy matching; a data mapping
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

Tensor mode (both dumps ``task: tensor``) reads every pair of dumped tensors, one pair at a time,
and computes msprobe's six metrics (:mod:`studio.tools.accuracy.msprobe_metrics`); its rules
replace the two norm rules above:

* error: every input's (and parameter's) one-thousandth error ratio is over 0.9 while an
  output's is under 0.1 (inputs agree, the output does not);
* warning: every input's cosine is over 0.9 and the outputs' lowest cosine is more than 0.1 below
  the inputs' lowest.

A tensor file that cannot be read (missing, truncated, or a ``.pt`` holding anything but a
tensor) makes its row an error naming the file; msprobe would leave it ``unsupported`` and pass.

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
from studio.core.jobs import CancelToken, Job, Progress, run_job
from studio.core.serial import to_json
from studio.core.safe_read import SETTINGS_CAP, explain_os_errors, read_text
from studio.tools.accuracy.msprobe_dump import STAT_KEYS, ApiCall, MsprobeDump, TensorStat

IN_THRESHOLD, OUT_THRESHOLD, WARN_RATIO = 0.1, 0.5, 10.0
# tensor mode: inputs' one-thousandth ratio above / outputs' below; inputs' cosine above / drop over
RATIO_IN, RATIO_OUT, COSINE_IN, COSINE_DROP = 0.9, 0.1, 0.9, 0.1
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
    # tensor mode: msprobe's six cells (Cosine, EucDist, MaxAbsErr, MaxRelativeErr, the two error
    # ratios) as msprobe writes them: a float, or its marker ("unsupported", "N/A", "Nan", "shape unmatched")
    tensor: dict[str, float | str] | None = None
    golden: TensorStat | None = None   # both sides' argument (statistics, requires_grad, data_name)
    target: TensorStat | None = None

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
    __json_skip__ = ("messages", "is_output", "golden", "target")
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
    unreadable: list[dict] = field(default_factory=list)  # tensor files that could not be read: file, what

    @property
    def tensor_mode(self) -> bool:
        """Both dumps hold the tensors themselves (msprobe's ``task: tensor``)."""
        return self.golden.task == self.target.task == "tensor"

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
                "unreadable": self.unreadable, "rows": self.rows}

    def __str__(self) -> str:
        data = to_json(self)
        sides = (f"dumps ({self.golden.framework} golden, {self.target.framework} target)"
                 if self.golden.framework or self.target.framework else f"comparison read from {self.target.path.name}")
        lines = [f"msprobe {self.target.task} {sides}: "
                 f"{data['apis_matched']} APIs matched ({len(self.unmatched_golden)} golden-only, "
                 f"{len(self.unmatched_target)} target-only), {data['rows_compared']} arguments: {data['pass']} pass, "
                 f"{data['warning']} warning, {data['error']} error"]
        for bad in self.unreadable[:8]:
            lines.append(f"unreadable tensor: {bad['file']}: {bad['what']}")
        if len(self.unreadable) > 8:
            lines.append(f"... and {len(self.unreadable) - 8} more unreadable tensor files")
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
    with explain_os_errors(path, "mapping file"):
        text = read_text(path, "mapping file", SETTINGS_CAP)
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
                api_mapping: dict[str, str] | None = None, fuzzy: bool = True,
                layer_mapping: dict[str, dict[str, str]] | None = None) -> tuple[list, list, list]:
    """(pairs in target order, golden-only names, target-only names). A layer mapping
    (:mod:`studio.tools.accuracy.msprobe_layers`) pairs what the names left, before the fuzzy matching."""
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
    # The API mapping is read both ways: a name of either framework becomes the mapping's right side.
    canonical = dict(api_mapping or {})

    def key(call: ApiCall) -> str:
        base = call.base
        for source, dest in canonical.items():
            if base == source or base.startswith(source + "."):
                return dest + base[len(source):]
        return base

    if layer_mapping:
        from studio.tools.accuracy.msprobe_layers import layer_pairs

        def operation(call: ApiCall) -> str:  # "Mint.cos.forward" and "Torch.cos.forward" -> "cos"
            parts = key(call).split(".")
            return ".".join(parts[1:-1] if parts[-1] in ("forward", "backward") else parts[1:])

        for t_name, g_name in layer_pairs(golden, target, layer_mapping, operation, used, set(pairs)).items():
            pairs[t_name] = g_name
            used.add(g_name)
    if fuzzy:
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
                    api_mapping: Path | None = None, fuzzy: bool = True,
                    layer_mapping: Path | None = None) -> MsprobeComparison:
    """Read and compare two msprobe dumps (see the module docstring)."""
    return run_job(iter_compare_msprobe(golden_path, target_path, data_mapping, api_mapping, fuzzy,
                                        layer_mapping=layer_mapping))


def iter_compare_msprobe(golden_path: Path, target_path: Path, data_mapping: Path | None = None,
                         api_mapping: Path | None = None, fuzzy: bool = True,
                         cancel: CancelToken | None = None, layer_mapping: Path | None = None) -> Job[MsprobeComparison]:
    """:func:`compare_msprobe` as a job: yields Progress per call (tensor mode reads one pair at a time)."""
    from studio.tools.accuracy.msprobe_dump import read_msprobe
    from studio.tools.accuracy.msprobe_layers import read_layer_mapping

    golden, target = read_msprobe(golden_path), read_msprobe(target_path)
    pairs, only_golden, only_target = match_calls(golden, target, read_name_mapping(data_mapping),
                                                  read_name_mapping(api_mapping), fuzzy,
                                                  read_layer_mapping(layer_mapping))
    tensors = golden.task == target.task == "tensor"
    rows, unreadable = [], []
    for number, (g_call, t_call) in enumerate(pairs):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if tensors and number % 16 == 0:
            yield Progress(number / max(len(pairs), 1), f"reading tensors of {t_call.name}")
        g_slots = {_slot(t.slot, g_call.name): t for t in g_call.tensors}
        pairs_of_call = [(g_slots[_slot(t.slot, t_call.name)], t) for t in t_call.tensors
                         if _slot(t.slot, t_call.name) in g_slots]
        call_rows = [_row(g_call.name, t_call.name, g, t) for g, t in pairs_of_call]
        if tensors:
            for row in call_rows:
                unreadable += _measure(row, golden.path, target.path)
        _judge(t_call, call_rows, pairs_of_call, across=golden.framework != target.framework, tensors=tensors)
        rows += call_rows
    result = MsprobeComparison(golden, target, rows, pairs, only_golden, only_target, unreadable=unreadable)
    result.modules = _module_tree(target, rows)
    return result


def _measure(row: TensorRow, golden_folder: Path, target_folder: Path) -> list[dict]:
    """msprobe's six metrics of one pair of dumped tensors (read here, dropped on return); the files
    that could not be read."""
    from studio.tools.accuracy.msprobe_metrics import tensor_metrics, unsupported
    from studio.tools.accuracy.msprobe_tensors import read_dumped_tensor, tensor_path

    g_name, t_name = row.golden.data_name, row.target.data_name
    if not g_name or not t_name or g_name == "-1" or t_name == "-1":  # scalars and None: no tensor
        row.tensor = unsupported()
        return []
    bad = []
    arrays = []
    for folder, name in ((target_folder, t_name), (golden_folder, g_name)):
        try:
            arrays.append(read_dumped_tensor(tensor_path(folder, name)))
        except UserError as exc:
            bad.append({"file": exc.where or name, "what": exc.what})
    if bad:
        row.tensor = unsupported()
        for entry in bad:
            row.flag(ERROR, f"tensor file unreadable: {entry['file']}: {entry['what']}")
        return bad
    row.tensor, _notes = tensor_metrics(*arrays)
    return []


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
                     is_output=target.is_output, golden=golden, target=target)


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
           across: bool = False, tensors: bool = False) -> None:
    """msprobe's checkers over one call's rows (see the module docstring); ``across``: the dumps
    come from two frameworks, whose dtype names differ; ``tensors``: tensor mode's rules."""
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
        # msprobe leaves fused projections (qkv, gate_up) out of its dtype rule
        fused = "qkv" in row.golden_api or "gate_up" in row.golden_api
        if not fused and not same_dtype(g.dtype, t.dtype, across):
            row.flag(ERROR, f"dtype {t.dtype} on the target, {g.dtype} on the golden side")
        if g.shape != t.shape:
            row.flag(ERROR, f"shape {row.target_shape} on the target, {row.golden_shape} on the golden side")
        if not row.is_output and t.scalar and g.scalar and t.value != g.value:
            row.flag(ERROR, f"scalar argument {t.value!r} on the target, {g.value!r} on the golden side")
    if output_only:
        return
    inputs = [r for r in rows if not r.is_output]
    outputs = [r for r in rows if r.is_output]
    if tensors:
        _judge_tensors(inputs, outputs)
        return
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


def _lowest(rows: list[TensorRow], column: str) -> float:
    """The lowest numeric cell of ``column`` (1.0 when none is a number), as msprobe takes it."""
    values = [r.tensor[column] for r in rows if r.tensor and isinstance(r.tensor.get(column), float)]
    return min([1.0, *values])


def _judge_tensors(inputs: list[TensorRow], outputs: list[TensorRow]) -> None:
    """Tensor mode's two rules over one call (see the module docstring)."""
    if not outputs:
        return
    ratio_in, ratio_out = _lowest(inputs, "One Thousandth Err Ratio"), _lowest(outputs, "One Thousandth Err Ratio")
    if ratio_in > RATIO_IN and ratio_out < RATIO_OUT:
        outputs[0].flag(ERROR, f"the inputs agree (one-thousandth error ratio {ratio_in:.1%} > {RATIO_IN:.0%}) while "
                               f"an output's is {ratio_out:.1%} (< {RATIO_OUT:.0%}): this call went wrong")
    cos_in, cos_out = _lowest(inputs, "Cosine"), _lowest(outputs, "Cosine")
    if cos_in > COSINE_IN and cos_in - cos_out > COSINE_DROP:
        outputs[0].flag(WARNING, f"cosine drops from {cos_in:.6f} (inputs) to {cos_out:.6f} (outputs), by over "
                                 f"{COSINE_DROP}: double check this call")


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
