"""Test helpers for the accuracy tool: an NPU dump writer from the documented layout, tiny models.

The writer follows ascend_formats.md §2.3/2.4 (uint64 header length, DumpData protobuf, raw
tensors: inputs then outputs) independently of the reader's code paths except the shared
varint encoder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from studio.tools.accuracy import npu_layout

NP_TO_CODE = {np.dtype(np.float32): 1, np.dtype(np.float16): 2, np.dtype(np.int8): 3, np.dtype(np.int32): 7,
              np.dtype(np.int64): 8, np.dtype(np.float64): 12}


# A protobuf wire encoder written from the format's documentation, independent of the reader's
# (which uses the protobuf runtime), so a round trip tests the reader against the bytes.
def encode_varint(value: int) -> bytes:
    """Encode a non-negative int (negative int32/64 as 10-byte two's complement)."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_field(number: int, value: int | bytes | str) -> bytes:
    """One field: ints as varints, bytes / str / encoded messages as length-delimited."""
    if isinstance(value, int):
        return encode_varint(number << 3) + encode_varint(value)
    if isinstance(value, str):
        value = value.encode("utf-8")
    return encode_varint(number << 3 | 2) + encode_varint(len(value)) + bytes(value)


def _shape(dims) -> bytes:
    return b"".join(encode_field(1, int(d)) for d in dims)


def _slot(array: np.ndarray, fmt: int, original_shape, is_output: bool, original_op: str = "") -> tuple[bytes, bytes]:
    device = npu_layout.from_original(array, fmt)
    raw = device.astype(device.dtype.newbyteorder("<")).tobytes()
    code = NP_TO_CODE[array.dtype]
    body = encode_field(1, code) + encode_field(2, fmt) + encode_field(3, _shape(device.shape))
    if is_output:
        if original_op:
            body += encode_field(4, encode_field(1, original_op) + encode_field(2, 0))
        body += encode_field(6, len(raw)) + encode_field(7, _shape(original_shape))
    else:
        body += encode_field(5, len(raw)) + encode_field(6, _shape(original_shape))
    return body, raw


def write_npu_dump(folder: Path, op_type: str, op_name: str, inputs: list[tuple[np.ndarray, int]],
                   outputs: list[tuple[np.ndarray, int]], timestamp: int = 1700000000000000, task: int = 1,
                   stream: int = 0, original_op: str = "") -> Path:
    """Write one dump file; inputs/outputs are (array in original shape, format code)."""
    header = encode_field(1, "2.0") + encode_field(2, timestamp) + encode_field(6, op_name)
    tail = b""
    for array, fmt in inputs:
        body, raw = _slot(array, fmt, array.shape, False)
        header += encode_field(4, body)
        tail += raw
    for array, fmt in outputs:
        body, raw = _slot(array, fmt, array.shape, True, original_op)
        header += encode_field(3, body)
        tail += raw
    folder.mkdir(parents=True, exist_ok=True)
    safe = op_name.replace("/", "_").replace(".", "_")
    path = folder / f"{op_type}.{safe}.{task}.{stream}.{timestamp}"
    path.write_bytes(len(header).to_bytes(8, "little") + header + tail)
    return path


def write_npy_dump(folder: Path, tensors: list[tuple[str, np.ndarray]], start: int = 1700000000000000) -> Path:
    """A framework-style folder: ``{op}.0.{ts}.npy`` in the given order."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, (name, array) in enumerate(tensors):
        np.save(folder / f"{name}.0.{start + i}.npy", array)
    return folder


def chain_model(path: Path, scales=(1.0, 1.0, 1.0, 1.0), shape=(1, 4, 8, 8), bias_error: tuple[int, float] | None = None):
    """x -> [Mul(w_i) -> Add(b_i) -> Relu] x len(scales) -> Softmax; seeded weights.

    ``bias_error=(k, value)`` adds ``value`` to the bias of block k (an injected error).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    nodes, inits = [], []
    x = "x"
    for i, scale in enumerate(scales):
        w = (rng.standard_normal(shape[1:]) * scale).astype(np.float32)
        b = (rng.standard_normal(shape[1:]) * 0.1 + 0.5).astype(np.float32)
        if bias_error and bias_error[0] == i:
            b = b + np.float32(bias_error[1]) * rng.standard_normal(shape[1:]).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"block{i}/w"), numpy_helper.from_array(b, f"block{i}/b")]
        nodes += [helper.make_node("Mul", [x, f"block{i}/w"], [f"block{i}/mul"], name=f"block{i}/mul"),
                  helper.make_node("Add", [f"block{i}/mul", f"block{i}/b"], [f"block{i}/add"], name=f"block{i}/add"),
                  helper.make_node("Relu", [f"block{i}/add"], [f"block{i}/relu"], name=f"block{i}/relu")]
        x = f"block{i}/relu"
    nodes.append(helper.make_node("Softmax", [x], ["prob"], name="head/softmax", axis=1))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, list(shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save(model, str(path))
    return path
