"""ONNX Runtime's exception text, made fit to show: no C++ file, line or function signature.

ONNX Runtime raises ``[ONNXRuntimeError] : 1 : FAIL : /onnxruntime_src/.../model.cc:256
onnxruntime::Model::Model(onnx::ModelProto&&, ...) Unsupported model IR version: 99``; the
user needs the last part only.
"""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ")
_SOURCE = re.compile(r"/?\S*onnxruntime\S*\.(?:cc|h|cpp):\d+ ")


def ort_message(exc: BaseException, limit: int = 500) -> str:
    """The readable part of an ONNX Runtime error (first line, C++ location and signature dropped)."""
    text = str(exc).strip() or type(exc).__name__
    text = _PREFIX.sub("", text.splitlines()[0])
    match = _SOURCE.search(text)
    if match:
        rest = text[match.end():]
        # Skip the function signature: it ends at the ")" that closes its first "(" (nested parens allowed).
        depth, end = 0, None
        for index, char in enumerate(rest):
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
                if depth == 0:
                    end = index + 1
                    break
        text = (text[:match.start()] + (rest[end:] if end is not None else rest)).strip()
    return text[:limit]
