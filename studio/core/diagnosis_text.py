"""How an FP16 diagnosis reads, from its JSON form: one renderer for every tool that shows one.

The diagnosis itself is made by the accuracy engine (:mod:`studio.tools.accuracy.diagnosis`); the
converter's report holds it as JSON and prints it with the same lines as ``fp16-check``.
"""

from __future__ import annotations


ALWAYS = "inf/NaN where FP32 is finite, and an all-zero output where FP32 is not, always fail"


def describe_thresholds(values: dict, short: bool = False) -> str:
    """The limits as a user reads them (a metric passes above ``cosine``, below the others);
    ``short``: without the rules no limit changes (:data:`ALWAYS`)."""
    parts = []
    for name, value in (values or {}).items():
        if name == "cosine":
            parts.append(f"cosine > {value:g}")
        elif name in ("atol", "rtol"):
            parts.append(f"{name} {value:g}")
        else:
            parts.append(f"{name} < {value:g}")
    if short:
        return ", ".join(parts)
    return (", ".join(parts) + "; " if parts else "") + ALWAYS


def diagnosis_lines(d: dict) -> list[str]:
    """``FP16 verdict: FAIL — underflow at op X (Add)``, the message, the fix, notes and thresholds."""
    head = f"FP16 verdict: {str(d.get('verdict', '?')).upper()}"
    cause = d.get("cause") or "none"
    if cause != "none":
        head += f" — {cause.replace('_', ' ')}" + (f" at op {d['op']} ({d.get('op_type', '')})" if d.get("op") else "")
    lines = [head, f"  {d.get('message', '')}"]
    if d.get("fix"):
        lines.append(f"  fix: {d['fix']}")
    lines += [f"  note: {note}" for note in d.get("notes") or []]
    lines.append(f"  thresholds: {describe_thresholds(d.get('thresholds') or {})}")
    return lines
