"""msprobe dumps (PyTorch or MindSpore training on NPU or GPU): ``dump.json``, ``stack.json``, ``construct.json``.

``dump.json`` is ``{task, level, framework, dump_data_dir, data: {api: {input_args, input_kwargs,
output, parameters?, ...}}}`` in call order. ``task`` says what each tensor holds: ``statistics``
(Max, Min, Mean, Norm), ``md5`` (a checksum too) or ``tensor`` (the data, in ``dump_tensor_data/``
under ``data_name``). Arguments nest (lists of tensors, None, scalars); a tensor's slot is named
as msprobe names it, e.g. ``Functional.conv2d.0.forward.input.3.1`` for the second item of the
fourth argument. ``stack.json`` gives each API's Python call stack, ``construct.json`` the module
(or cell) each API ran in, and each module's parent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import ACCURACY, HEAD_BYTES, FileFormat, json_text, path_only
from studio.core.safe_read import load_json

STAT_KEYS = ("Max", "Min", "Mean", "Norm")
# msprobe's order of a call's arguments: inputs, then parameters, then outputs
_SECTIONS = (("input_args", "input"), ("input_kwargs", "input"), ("input", "input"),
             ("parameters", "parameters"), ("output", "output"))


@dataclass
class TensorStat:
    """One argument of an API call: its slot, dtype, shape and statistics (None where not dumped).

    Scalars (``int``, ``float``, ``bool`` arguments) are kept as msprobe keeps them: dtype
    ``<class 'int'>``, shape ``()``, every statistic the value itself; a ``None`` argument has
    dtype ``N/A`` and no statistics.
    """

    slot: str
    dtype: str
    shape: tuple | None
    stats: dict[str, float | None]
    md5: str | None = None
    data_name: str | None = None
    requires_grad: bool | None = None
    scalar: bool = False
    value: object = None  # a scalar argument's value (strings included)
    raw: dict | None = None  # the statistics as dump.json writes them (ints stay ints, "inf" stays text)

    @property
    def is_output(self) -> bool:
        """An output of the call (everything else — arguments, parameters — is an input)."""
        return ".output." in self.slot or self.slot.endswith(".output")


@dataclass
class ApiCall:
    """One dumped API call in call order: its tensors, module and stack."""

    name: str
    order: int
    tensors: list[TensorStat]
    module: str | None = None
    stack: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        """The name without its call counter: ``Functional.conv2d.forward`` for ``Functional.conv2d.3.forward``."""
        parts = self.name.split(".")
        return ".".join(p for p in parts if not p.isdigit())


@dataclass
class MsprobeDump:
    """A whole dump folder (one rank, one step)."""

    path: Path
    task: str
    level: str
    framework: str
    calls: list[ApiCall]
    parents: dict[str, str | None]  # construct.json: api or module -> enclosing module

    def by_name(self) -> dict[str, ApiCall]:
        """Calls by name."""
        return {c.name: c for c in self.calls}

    def module_path(self, name: str) -> list[str]:
        """The modules enclosing ``name``, outermost first."""
        chain, seen = [], set()
        current = self.parents.get(name)
        while current and current not in seen:
            seen.add(current)
            chain.append(current)
            current = self.parents.get(current)
        return chain[::-1]


def is_msprobe_dump(path: Path) -> bool:
    """A ``dump.json`` of msprobe (or a folder holding one): the registry's own match."""
    path = Path(path)
    if path.is_dir():
        return match_msprobe_dir(path)
    return match_msprobe_dump(path, _head(path, HEAD_BYTES))


def match_msprobe_dump(path: Path, head: bytes) -> bool:
    """msprobe's dump.json: an object with its ``task`` (statistics, md5, tensor) and ``framework``."""
    text = json_text(head)
    return bool(text and text.startswith("{") and re.search(r'"task"\s*:\s*"(statistics|md5|tensor)"', text)
                and '"framework"' in text)


def match_msprobe_dir(path: Path) -> bool:
    """A folder holding msprobe's dump.json (stack.json and construct.json beside it)."""
    dump = path / "dump.json"
    return dump.is_file() and match_msprobe_dump(dump, _head(dump, HEAD_BYTES))


def _head(path: Path, size: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def read_msprobe(path: Path | str) -> MsprobeDump:
    """Read ``dump.json`` (or the folder holding it) with its stack and construct files when present."""
    path = Path(path)
    file = path / "dump.json" if path.is_dir() else path
    data = _json(file, "dump.json")
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise UserError("Not an msprobe dump.json: no \"data\" object", file,
                        "Give the dump.json msprobe wrote (dump_path/stepN/rankN/dump.json).")
    stacks = _stacks(file.parent / "stack.json")
    parents = _json(file.parent / "construct.json", "construct.json") if (file.parent / "construct.json").is_file() \
        else {}
    calls = []
    for order, (name, record) in enumerate(data["data"].items()):
        tensors: list[TensorStat] = []
        if isinstance(record, dict) and ".parameters_grad" in name:
            # {param: [gradient]}: msprobe names each ``<name>.<param>`` (with an index only when several)
            for key, value in record.items():
                items = value if isinstance(value, list) else [value]
                for index, sub in enumerate(items):
                    _flatten(sub, f"{name}.{key}" + (f".{index}" if len(items) > 1 else ""), tensors, False)
        elif isinstance(record, dict):
            for key, label in _SECTIONS:
                if key in record:
                    _flatten(record[key], f"{name}.{label}", tensors, key in ("input_kwargs", "parameters"))
        calls.append(ApiCall(name, order, tensors, parents.get(name) if isinstance(parents, dict) else None,
                             stacks.get(name, [])))
    return MsprobeDump(file.parent, str(data.get("task", "")), str(data.get("level", "")),
                       str(data.get("framework", "")), calls, parents if isinstance(parents, dict) else {})


def _shape(value) -> tuple | None:
    """A dumped shape as a tuple of whole numbers; None when the dump wrote something else (a
    number, text, NaN): the statistics still compare, the shape is shown as unknown."""
    if value is None or value == []:
        return ()
    if not isinstance(value, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in value):
        return None
    return tuple(value)


def _json(path: Path, what: str):
    try:
        return load_json(path, what)
    except FileNotFoundError as exc:
        raise UserError(f"{what} not found", path, "Give the folder msprobe wrote (it holds dump.json).") from exc
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"{what} is not valid JSON ({exc})", path, "The dump may be truncated; dump again.") from exc


def _stacks(path: Path) -> dict[str, list[str]]:
    """``{api: [frames]}`` from stack.json (``{id: [[api names], [frames]]}``; older: ``{api: [frames]}``)."""
    if not path.is_file():
        return {}
    data = _json(path, "stack.json")
    out: dict[str, list[str]] = {}
    if not isinstance(data, dict):
        return out
    for key, value in data.items():
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], list):
            for api in value[0]:
                out[str(api)] = [str(f) for f in value[1]]
        elif isinstance(value, list):
            out[key] = [str(f) for f in value]
    return out


def _flatten(item, slot: str, out: list[TensorStat], keyed: bool) -> None:
    """Every argument inside ``item`` (nested lists, kwargs and parameter dicts), named as msprobe names slots."""
    if isinstance(item, list):
        for index, sub in enumerate(item):
            _flatten(sub, f"{slot}.{index}", out, False)
        return
    if item is None:
        out.append(TensorStat(slot, "N/A", None, {k: None for k in STAT_KEYS}))
        return
    if not isinstance(item, dict):
        return
    if keyed:  # input_kwargs and parameters: {name: value}
        for key, sub in item.items():
            _flatten(sub, f"{slot}.{key}", out, False)
        return
    if "dtype" in item and "shape" in item:
        stats = {k: _number(item.get(k)) for k in STAT_KEYS}
        grad = item.get("requires_grad")
        out.append(TensorStat(slot, str(item.get("dtype")), _shape(item.get("shape")), stats, item.get("md5"),
                              item.get("data_name"), grad if isinstance(grad, bool) else None,
                              raw={k: item.get(k) for k in STAT_KEYS}))
        return
    kind = item.get("type")
    if kind in ("int", "float", "bool", "str") and "value" in item:
        value = item["value"]
        number = None if isinstance(value, (bool, str)) else _number(value)
        stats = {k: number for k in STAT_KEYS}
        out.append(TensorStat(slot, f"<class '{kind}'>", (), stats, scalar=True, value=value))
        return
    for key, sub in item.items():  # a dict argument holding tensors
        if isinstance(sub, (dict, list)):
            _flatten(sub, f"{slot}.{key}", out, False)


def _number(value) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):  # "inf", "nan" as msprobe writes them
        try:
            return float(value)
        except ValueError:
            return None
    return None


MSPROBE_DUMP = FileFormat("msprobe_dump", "msprobe dump (dump.json of a PyTorch or MindSpore run)", ACCURACY,
                          match_msprobe_dump, path_only(read_msprobe))
MSPROBE_DIR = FileFormat("msprobe_dir", "msprobe dump folder (dump.json, stack.json, construct.json)", ACCURACY,
                         match_msprobe_dir, path_only(read_msprobe), folder=True)
