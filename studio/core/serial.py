"""One serialiser for every result: :func:`to_json` gives JSON-ready data, :func:`from_json` reads it back.

It works on dataclasses without help: nested dataclasses, lists, tuples, sets, dicts, ``Path`` (as
text), enums (as their value), numpy scalars and arrays (as plain numbers and lists), ``Optional``.
JSON has no literal for NaN and infinities, so floats that are not finite are written as the text
``"nan"``, ``"inf"`` or ``"-inf"`` and read back into floats where the field holds a float.

A class whose ``--json`` keys differ from its fields says how with class attributes, read by both
directions (their shape is checked once per class):

``__json_rename__ = {"field": "key"}``
    the key a field is written under
``__json_skip__ = ("field", ...)``
    fields never written (read back as their default)
``__json_omit_empty__ = ("field", ...)``
    fields written only when they hold something (not None, not empty)
``__json_round__ = {"field": 3}``
    floats rounded to that many decimals when written
``__json_extra__ = ("name", ...)`` or ``{"key": "name"}``
    derived values written after the fields: properties, or methods taking no argument
    (``{"passed": "__bool__"}`` writes ``bool(obj)``); ignored when reading

and, where the shape is not a renaming of fields, with methods: ``__json__(self) -> dict`` (its
values may be any objects this module writes) and ``__from_json__(cls, data) -> obj``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import abc
import math
import sys
import types
import typing
from functools import lru_cache
from pathlib import PurePath
from typing import Any, TypeVar

from studio.core.errors import UserError

T = TypeVar("T")

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf,
              "NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_PLAIN = (str, int, bool, type(None))


def json_float(value: float) -> float | str:
    """``value`` as JSON holds it: the number, or ``"nan"`` / ``"inf"`` / ``"-inf"``."""
    value = float(value)
    return value if math.isfinite(value) else str(value)


def to_json(obj: Any) -> Any:
    """``obj`` as JSON-ready data (dicts with text keys, lists, text, numbers, booleans, None)."""
    if isinstance(obj, _PLAIN):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    kind = type(obj)
    if kind is dict or isinstance(obj, dict):
        return {(k if isinstance(k, str) else str(to_json(k))): to_json(v) for k, v in obj.items()}
    if kind is list or isinstance(obj, (list, tuple, set, frozenset)):
        return [to_json(v) for v in obj]
    hook = getattr(kind, "__json__", None)
    if hook is not None:
        return to_json(hook(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _dataclass_to_json(obj)
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return to_json(obj.value)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(obj, numpy.ndarray):
            return to_json(obj.tolist())
        if isinstance(obj, numpy.generic):
            return to_json(obj.item())
    raise TypeError(f"{kind.__name__} cannot be written as JSON (give the class a __json__ method)")


def from_json(cls: type[T], data: Any) -> T:
    """The ``cls`` (a dataclass, or any type hint such as ``list[Row]``) that ``data`` describes:
    the inverse of :func:`to_json`. Keys the class does not know (derived values) are ignored; a
    missing key takes the field's default, and is a UserError when the field has none."""
    return _convert(cls, data, cls.__name__ if isinstance(cls, type) else str(cls))


def named_table(obj: Any, key: str = "name") -> dict:
    """``obj``'s JSON form without its ``key`` field: the TOML table stored under ``[section.NAME]``."""
    data = to_json(obj)
    data.pop(key, None)
    return data


def dumps(obj: Any, indent: int | None = 2) -> str:
    """``obj`` as JSON text (what ``--json`` prints and report files hold): byte for byte
    ``json.dumps(to_json(obj), indent=indent)``, written without converting ``obj`` first and with
    big lists of rows written column by column (:mod:`studio.core.json_text`)."""
    if indent is None:
        import json

        return json.dumps(to_json(obj))
    from studio.core.json_text import Writer

    return Writer(indent, _one_level).text(obj)


def _one_level(obj: Any) -> Any:
    """``obj`` as :func:`to_json` sees it one level deep: a dict with text keys, a list, or a
    scalar, whose insides may still need converting (the writer converts them as it meets them)."""
    if isinstance(obj, dict):
        return {(k if isinstance(k, str) else str(to_json(k))): v for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    kind = type(obj)
    hook = getattr(kind, "__json__", None)
    if hook is not None:
        return hook(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _dataclass_to_json(obj, _as_is)
    if isinstance(obj, enum.Enum):
        return obj.value
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, (numpy.ndarray, numpy.generic)):
        return obj.tolist() if isinstance(obj, numpy.ndarray) else obj.item()
    return to_json(obj)  # paths; anything else is refused there, with the same words


def _as_is(value: Any) -> Any:
    return value


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    key: str
    digits: int | None
    omit_empty: bool


@lru_cache(maxsize=None)
def _plan(cls: type) -> tuple[tuple[_Field, ...], tuple[tuple[str, str], ...]]:
    """The fields to write (name, key, rounding, omit when empty) and the derived values, per class."""
    rename = getattr(cls, "__json_rename__", {})
    skip = set(getattr(cls, "__json_skip__", ()))
    omit = set(getattr(cls, "__json_omit_empty__", ()))
    digits = getattr(cls, "__json_round__", {})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = (set(rename) | skip | omit | set(digits)) - names
    if unknown:
        raise TypeError(f"{cls.__name__}: JSON settings name no field: {', '.join(sorted(unknown))}")
    plan = tuple(_Field(f.name, rename.get(f.name, f.name), digits.get(f.name), f.name in omit)
                 for f in dataclasses.fields(cls) if f.name not in skip)
    extra = getattr(cls, "__json_extra__", ())
    extra = tuple(extra.items() if isinstance(extra, dict) else ((name, name) for name in extra))
    keys = [f.key for f in plan] + [key for key, _ in extra]
    if len(set(keys)) != len(keys):
        raise TypeError(f"{cls.__name__}: two values would be written under one JSON key: "
                        f"{', '.join(sorted({k for k in keys if keys.count(k) > 1}))}")
    return plan, extra


def _dataclass_to_json(obj: Any, convert: Any = None) -> dict:
    """``obj``'s fields and derived values under their keys, each value passed through ``convert``
    (default :func:`to_json`; the text writer converts them itself)."""
    convert = convert or to_json
    plan, extra = _plan(type(obj))
    out = {}
    for f in plan:
        value = getattr(obj, f.name)
        kind = type(value)
        if not f.omit_empty and (kind is str or kind is int or kind is bool or value is None):
            out[f.key] = value  # the common case first: 12k rows of a big profile's statistics
            continue
        if kind is float and f.digits is None and not f.omit_empty:
            out[f.key] = value if math.isfinite(value) else str(value)
            continue
        if f.omit_empty and (value is None or (hasattr(value, "__len__") and not len(value))):
            continue
        if f.digits is not None and isinstance(value, float) and math.isfinite(value):
            value = round(value, f.digits)
        out[f.key] = convert(value)
    for key, name in extra:
        value = getattr(obj, name)
        out[key] = convert(value() if callable(value) else value)
    return out


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    """The resolved type of each field; a hint that cannot be resolved (an import only made for
    type checkers) reads its value as it is."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        hints = {}
        module = sys.modules.get(cls.__module__)
        for f in dataclasses.fields(cls):
            try:
                hints[f.name] = typing.get_type_hints(
                    type("_One", (), {"__annotations__": {f.name: f.type}, "__module__": cls.__module__}),
                    vars(module) if module else None)[f.name]
            except (NameError, TypeError, AttributeError):
                hints[f.name] = Any
        return hints


def _dataclass_from_json(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise UserError(f"Expected a JSON object for {cls.__name__}, found {type(data).__name__}", where,
                        "Give the JSON Studio wrote (for example with --json).")
    plan, _ = _plan(cls)
    hints = _hints(cls)
    init = {f.name for f in dataclasses.fields(cls) if f.init}
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for f in plan:
        if f.name not in init:
            continue
        if f.key in data:
            values[f.name] = _convert(hints.get(f.name, Any), data[f.key], f"{where}, key {f.key}")
        elif (fields[f.name].default is dataclasses.MISSING
              and fields[f.name].default_factory is dataclasses.MISSING):
            raise UserError(f"{cls.__name__} data has no {f.key!r}", where,
                            "Give the JSON Studio wrote (for example with --json); it holds every key.")
    return cls(**values)


def _convert(hint: Any, value: Any, where: str) -> Any:
    """``value`` (JSON data) as the type ``hint`` describes."""
    if hint is Any or hint is object or isinstance(hint, typing.TypeVar):
        return value
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return _union(typing.get_args(hint), value, where)
    if origin is typing.Literal:
        return value
    if origin is not None:
        return _generic(origin, typing.get_args(hint), value, where)
    if not isinstance(hint, type):
        return value
    reader = getattr(hint, "__from_json__", None)
    if reader is not None:
        return reader(value)
    if dataclasses.is_dataclass(hint):
        return _dataclass_from_json(hint, value, where)
    if value is None:
        return None
    if hint is float:
        return _NONFINITE[value] if isinstance(value, str) and value in _NONFINITE else float(value)
    if hint in (str, int, bool):
        return value
    if issubclass(hint, (PurePath, enum.Enum)):
        return hint(value)
    if hint in (list, tuple, set, frozenset):
        return hint(value)
    if hint is dict:
        return dict(value)
    if hint.__module__ == "numpy" and hint.__name__ == "ndarray":
        import numpy as np

        return np.asarray(value)
    return value


def _union(args: tuple, value: Any, where: str) -> Any:
    if value is None:
        return None
    options = [a for a in args if a is not type(None)]
    if len(options) == 1:
        return _convert(options[0], value, where)
    if isinstance(value, str) and value in _NONFINITE and float in options and str not in options:
        return _NONFINITE[value]
    for option in options:  # the first container or dataclass the value's shape fits
        target = typing.get_origin(option) or option
        if isinstance(target, type) and (dataclasses.is_dataclass(target) and isinstance(value, dict)
                                         or target in (list, tuple) and isinstance(value, list)
                                         or target is dict and isinstance(value, dict)):
            return _convert(option, value, where)
    return value


def _generic(origin: type, args: tuple, value: Any, where: str) -> Any:
    if value is None:
        return None
    if origin in (list, set, frozenset, abc.Sequence, abc.Iterable):
        item = args[0] if args else Any
        items = [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if origin not in (set, frozenset) else origin(items)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if args:
            return tuple(_convert(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
        return tuple(value)
    if origin in (dict, abc.Mapping):
        key, item = args if args else (Any, Any)
        return {_key(key, k): _convert(item, v, f"{where}, {k}") for k, v in value.items()}
    return value


def _key(hint: Any, key: str) -> Any:
    """A dict key read back: JSON keys are text, ``dict[int, ...]`` keys are numbers."""
    if hint is int:
        return int(key)
    if hint is float:
        return _convert(float, key, "")
    return key
