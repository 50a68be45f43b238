"""ONNX Runtime's exception text, said the way a user can act on it.

ORT raises with its status code, the C++ source location and function signature inside the text
(``[ONNXRuntimeError] : 1 : FAIL : Load model from m.onnx failed:/onnxruntime_src/.../model.cc:256
onnxruntime::Model::Model(onnx::ModelProto&&, ...) Unsupported model IR version: 14``). Only the
last part is for the user; a few common cases get a plainer sentence.
"""

from __future__ import annotations

import re

_PREFIX = re.compile(r"\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*")
_LOAD = re.compile(r"Load model from .*? failed:\s*")
_CPP = re.compile(r"\S*onnxruntime_src/\S+:\d+\s+[^(\s]+\((?:[^()]|\([^()]*\))*\)\s*(?:const\s*)?")
_PLAIN = [
    (re.compile(r"No graph was found in the protobuf", re.I),
     "the file holds no ONNX graph (it is empty or not an ONNX model)"),
    (re.compile(r"Protobuf parsing failed", re.I), "the file is not a complete ONNX model (protobuf parsing failed)"),
]


def ort_message(exc: BaseException | str) -> str:
    """One line without ORT's status prefix and C++ locations."""
    text = str(exc).strip()
    for pattern, plain in _PLAIN:
        if pattern.search(text):
            return plain
    text = _CPP.sub("", _LOAD.sub("", _PREFIX.sub("", text)))
    line = next((line.strip() for line in text.splitlines() if line.strip()), "unknown error")
    return line[:400]
