"""A trace_view.json's events as the free-gap analysis reads them: only the fields it uses.

``msgspec`` decodes each event into a small struct (phase, name, process, thread, time, duration,
category, flow id) and keeps its ``args`` as the raw bytes of the file, decoded only for the events
that need them (a device task's type and connection, a launch's connection, a process name). On
the msprof exports that is 4-5x faster than a dict per event with every argument decoded, and
the values are those the dict decoder gives (``ts`` stays the string or number the file holds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from studio.core.errors import UserError
from studio.tools.profiler.rank_files import EXPORT_AGAIN

_NO_ARGS = msgspec.Raw(b"null")


class TraceEvent(msgspec.Struct):
    """One event: the fields the free-gap analysis reads; ``args`` undecoded."""

    ph: str = ""
    name: str = ""
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    cat: str = ""
    id: Any = None
    args: msgspec.Raw = _NO_ARGS

    def arg_map(self) -> dict:
        """The event's ``args`` as a dict ({} when absent, null or not an object)."""
        value = msgspec.json.decode(self.args)
        return value if isinstance(value, dict) else {}

    def arg(self, key: str):
        """One argument's value, or None."""
        return self.arg_map().get(key)

    def stamp(self, path: Path):
        """``ts`` as the file gives it; a UserError when a timed event has none."""
        if self.ts is None:
            raise UserError(f"{path.name}: a {self.ph!r} event named {self.name!r} has no ts", path, EXPORT_AGAIN)
        return self.ts


class _Wrapped(msgspec.Struct):
    traceEvents: list[TraceEvent] = []  # noqa: N815 - the Chrome trace format's own key


_DECODER = msgspec.json.Decoder(list[TraceEvent] | _Wrapped)


def read_events(path: Path) -> list[TraceEvent]:
    """The events of ``path`` (a bare event array or an object with ``traceEvents``)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UserError(f"{Path(path).name} cannot be read as a trace: {exc}", path, EXPORT_AGAIN) from exc
    try:
        decoded = _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UserError(f"{Path(path).name} cannot be read as a trace: {exc}", path, EXPORT_AGAIN) from exc
    return decoded.traceEvents if isinstance(decoded, _Wrapped) else decoded


def ns_column(values: list) -> np.ndarray:
    """Trace times or durations in µs (strings as the file holds them, or numbers) as int64 ns, each
    exactly as :func:`.free_sources.ns` gives it (cut below the ns, read digit by digit), converted
    as one array; the few a plain ``[-]digits[.digits]`` form does not cover go through ``ns``."""
    from studio.tools.profiler.cluster.free_sources import ns

    texts = [v if isinstance(v, str) else repr(float(v)) for v in values]
    if not texts:
        return np.zeros(0, np.int64)
    try:
        raw = np.array(texts, dtype=bytes)
    except UnicodeEncodeError:
        return np.array([ns(v) for v in values], np.int64)
    width = raw.dtype.itemsize
    b = raw.view(np.uint8).reshape(len(texts), width)
    col = np.arange(width)
    length = (b != 0).sum(axis=1)[:, None]
    inside = col < length
    digit = (b >= _ZERO) & (b <= _NINE)
    is_dot = b == _DOT
    negative = b[:, 0] == _MINUS
    first = negative.astype(np.int64)[:, None]
    dot = np.where(is_dot.any(axis=1), is_dot.argmax(axis=1), length[:, 0])[:, None]
    allowed = digit | is_dot | ((col == 0) & negative[:, None])
    plain = ((allowed | ~inside).all(axis=1) & (inside == (b != 0)).all(axis=1) & (is_dot.sum(axis=1) <= 1)
             & (dot > first)[:, 0] & (dot - first <= _WHOLE_DIGITS)[:, 0])
    # the µs before the dot (a digit at column j weighs 10^(dot - 1 - j)), then the ns the first three
    # digits after it make (10^(dot + 3 - j)): apart, so 16-digit epoch times cannot overflow
    d = np.where(digit & inside & (col >= first), b.astype(np.int64) - _ZERO, 0)
    whole_power = np.where(col < dot, dot - 1 - col, -1)
    frac_power = np.where((col > dot) & (col <= dot + 3), dot + 3 - col, -1)
    whole = (d * np.where(whole_power >= 0, _POW10[np.clip(whole_power, 0, 18)], 0)).sum(axis=1)
    frac = (d * np.where(frac_power >= 0, _POW10[np.clip(frac_power, 0, 18)], 0)).sum(axis=1)
    plain &= whole <= _WHOLE_MAX
    out = whole * 1000 + frac
    out = np.where(negative, -out, out)
    for i in np.nonzero(~plain)[0].tolist():
        out[i] = ns(values[i])
    return out


_MINUS, _DOT, _ZERO, _NINE = ord("-"), ord("."), ord("0"), ord("9")
_WHOLE_DIGITS = 16  # µs digits that fit int64 before the check below
_WHOLE_MAX = (2 ** 63 - 1 - 999) // 1000  # µs whose ns fit int64
_POW10 = 10 ** np.arange(19, dtype=np.int64)
