"""A model output that is not a numeric tensor, made comparable as one (or said to be not comparable).

ONNX Runtime hands back a ``seq(map)`` output (scikit-learn's ZipMap: one {class: probability}
per row) as a list of dicts, a ``seq(tensor)`` as a list of arrays and a string tensor as an
object array of ``str``. Validation compares numeric arrays, so each is laid out as one, with a
note saying how; an output that cannot be laid out is reported as not compared, never passed.

* a sequence of maps: one row per map, one column per key (the keys of both sides, sorted); a
  key one side lacks is NaN there, so the comparison fails on it;
* a sequence of tensors of one shape: stacked;
* a string tensor: 1 where the converted string equals the original, 0 where it does not,
  against all ones (any differing string is off by 1: beyond every tolerance below 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def comparable(reference: Any, converted: Any) -> tuple[np.ndarray, np.ndarray, str | None] | str:
    """(reference array, converted array, how they were laid out or None) for one output; a str
    saying why it cannot be compared when it cannot."""
    if isinstance(reference, np.ndarray) and isinstance(converted, np.ndarray):
        if reference.dtype.kind in "OUS" or converted.dtype.kind in "OUS":
            return _strings(reference, converted)
        return reference, converted, None
    if isinstance(reference, dict) and isinstance(converted, dict):
        reference, converted = [reference], [converted]
    if isinstance(reference, list) and isinstance(converted, list):
        if len(reference) != len(converted):
            return _lengths(reference, converted)
        if all(isinstance(v, dict) for v in reference + converted):
            return _maps(reference, converted)
        if all(isinstance(v, np.ndarray) for v in reference + converted):
            shapes = {v.shape for v in reference + converted}
            if len(shapes) == 1 and all(v.dtype.kind in "biuf" for v in reference + converted):
                return (np.stack(reference) if reference else np.zeros(0), np.stack(converted) if converted
                        else np.zeros(0), f"is a sequence of {len(reference)} tensor(s); compared stacked")
            return f"a sequence of tensors of differing shapes or types ({sorted(map(str, shapes))[:3]})"
    return f"a {_kind(reference)} against a {_kind(converted)}, which Studio does not compare"


def _maps(reference: list[dict], converted: list[dict]) -> tuple[np.ndarray, np.ndarray, str] | str:
    keys_ref = set().union(*reference) if reference else set()
    keys_conv = set().union(*converted) if converted else set()
    keys = sorted(keys_ref | keys_conv, key=lambda k: (str(type(k)), k))
    try:
        ref = np.array([[float(row.get(k, np.nan)) for k in keys] for row in reference], dtype=np.float64)
        conv = np.array([[float(row.get(k, np.nan)) for k in keys] for row in converted], dtype=np.float64)
    except (TypeError, ValueError):
        return "a sequence of maps whose values are not numbers"
    shown = ", ".join(map(repr, keys[:8])) + (" ..." if len(keys) > 8 else "")
    note = (f"is a sequence of {len(reference)} map(s) (ZipMap); compared as a {list(ref.shape)} table, one "
            f"column per key ({shown})")
    if keys_ref != keys_conv:
        note += (f"; keys differ: only in the original {sorted(keys_ref - keys_conv, key=str)}, only in the "
                 f"converted {sorted(keys_conv - keys_ref, key=str)} (NaN where a key is missing: FAIL)")
    return ref, conv, note


def _strings(reference: np.ndarray, converted: np.ndarray) -> tuple[np.ndarray, np.ndarray, str] | str:
    if reference.shape != converted.shape:
        return f"strings of shape {list(reference.shape)} against {list(converted.shape)}"
    same = np.array([_text(a) == _text(b) for a, b in zip(reference.flat, converted.flat)], dtype=np.float64)
    return (np.ones(reference.shape), same.reshape(reference.shape),
            f"holds strings; compared as 1 where the converted string equals the original ("
            f"{int(same.size - same.sum())} of {same.size} differ)")


def _lengths(reference: list, converted: list) -> str:
    return f"a sequence of {len(reference)} item(s) against {len(converted)}"


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _kind(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype.name} tensor"
    if isinstance(value, list):
        inner = {type(v).__name__ for v in value}
        return f"sequence of {', '.join(sorted(inner)) or 'nothing'}"
    return type(value).__name__
