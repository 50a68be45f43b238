"""Splitting ``--input-shape`` text into (input name, dims text) entries.

An entry is ``NAME=DIMS`` or ATC's ``NAME:DIMS``; one value may hold several, joined by ``;``.
Input names may themselves hold ``;``, ``:``, ``,`` and ``=``: tf2onnx names tensors
``model_1/conv2d/BiasAdd;model_1/conv2d/Conv2D:0``. So the text is split only where it is
unambiguous:

* the dims are the text after the LAST ``=`` (or, in ATC's form, the last ``:``) of an entry,
  and hold only digits, ``,``, ``x``, ``-``, ``~`` and spaces; an entry ends at the ``;`` after
  its dims, never at a ``;`` inside a name;
* when the model's input names are known, an entry starts with one of them (the longest that
  fits), so ``x:0;y:0=1,3`` is the input ``x:0;y:0`` when the model has that input.

Without the model's names, a value holding ``=`` is read in the ``NAME=DIMS`` form only (a ``:``
is then part of a name, as in TensorFlow's ``input:0``).
"""

from __future__ import annotations

import re
from collections.abc import Collection

DIMS = r"[\s\d,x~-]*"
_END = re.compile(DIMS + r"(?:;|$)")


def split_entries(text: str, names: Collection[str] | None = None) -> list[tuple[str, str]] | None:
    """``text`` as ``[(name, dims text), ...]``; None when it holds no ``NAME=DIMS`` or ``NAME:DIMS``
    entry at some point (no input name: the caller says how to write it).

    ``names`` are the model's real input names, when known: an entry that starts with one of them
    is that input, whatever ``;``, ``:`` or ``=`` the name holds. A name not among them is returned
    as the text says (the caller refuses it, listing the model's inputs).
    """
    separators = "=" if "=" in text else "=:"
    known = sorted(names or (), key=len, reverse=True)
    entries: list[tuple[str, str]] = []
    at = 0
    text = text.strip()
    while at < len(text):
        if text[at] in "; ":
            at += 1
            continue
        entry = _known_entry(text, at, known) or _entry(text, at, separators)
        if entry is None:
            return None
        name, dims, at = entry
        entries.append((name, dims))
    return entries


def _known_entry(text: str, at: int, known: list[str]) -> tuple[str, str, int] | None:
    """The entry at ``at`` when it starts with a known name followed by ``=``/``:`` and dims."""
    for name in known:
        end = at + len(name)
        if text.startswith(name, at) and end < len(text) and text[end] in "=:":
            match = _END.match(text, end + 1)
            if match:
                return name, text[end + 1: match.end()].rstrip(";"), match.end()
    return None


def _entry(text: str, at: int, separators: str) -> tuple[str, str, int] | None:
    """The shortest ``NAME SEP DIMS`` at ``at`` whose dims run to a ``;`` or the end: a name then
    keeps every ``;``, ``:`` or ``=`` that is not followed by dims alone."""
    for sep_at in range(at + 1, len(text)):
        if text[sep_at] not in separators:
            continue
        match = _END.match(text, sep_at + 1)
        if match:
            return text[at:sep_at].strip(), text[sep_at + 1: match.end()].rstrip(";"), match.end()
    return None
