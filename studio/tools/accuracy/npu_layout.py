"""NPU dump data types and device layouts, and their conversion back to the framework shape.

Data types use the ``ge.proto.DataType`` numbering (the one dump files carry); formats use the
``ge::Format`` numbering, masked with 0xff (upper bits carry a sub-format / C0). Conversions
(numpy versions of MSTT ``AclTensor.cpp``):

* NC1HWC0 [N, C1, H, W, C0] -> NCHW [N, C, H, W] (C from the original shape);
* FRACTAL_Z [C1·H·W, N1, N0, C0] -> NCHW [N, C, H, W] (weights);
* FRACTAL_NZ [..., W1, H1, H0, W0] -> ND [..., H, W].

Other formats are returned in the device shape (reshaped to the original shape when only the
element order is trivially the same, i.e. ND / NCHW / NHWC with equal element counts).
"""

from __future__ import annotations

import math

import numpy as np

DTYPES: dict[int, np.dtype | str] = {
    1: np.dtype(np.float32), 2: np.dtype(np.float16), 3: np.dtype(np.int8), 4: np.dtype(np.uint8),
    5: np.dtype(np.int16), 6: np.dtype(np.uint16), 7: np.dtype(np.int32), 8: np.dtype(np.int64),
    9: np.dtype(np.uint32), 10: np.dtype(np.uint64), 11: np.dtype(np.bool_), 12: np.dtype(np.float64),
    16: np.dtype(np.complex64), 17: np.dtype(np.complex128), 27: "bfloat16",
}
DTYPE_NAMES = {0: "UNDEFINED", 1: "FLOAT", 2: "FLOAT16", 3: "INT8", 4: "UINT8", 5: "INT16", 6: "UINT16",
               7: "INT32", 8: "INT64", 9: "UINT32", 10: "UINT64", 11: "BOOL", 12: "DOUBLE", 13: "STRING",
               16: "COMPLEX64", 17: "COMPLEX128", 27: "BF16", 28: "INT4"}
FORMATS = {0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 12: "NC1HWC0_C04",
           13: "FRACTAL_Z_C04", 16: "HWCN", 27: "NDHWC", 29: "FRACTAL_NZ", 30: "NCDHW", 32: "NDC1HWC0",
           33: "FRACTAL_Z_3D", 0xFF: "RESERVED"}
NC1HWC0, FRACTAL_Z, FRACTAL_NZ = 3, 4, 29


class LayoutError(ValueError):
    """The data does not fit the declared shape or layout."""


def numpy_dtype(code: int) -> np.dtype | str | None:
    """numpy dtype for a dump data type code; 'bfloat16' (decoded by :func:`decode`); None if unsupported."""
    return DTYPES.get(code)


def decode(raw: bytes | memoryview, code: int) -> np.ndarray:
    """Raw bytes -> flat array of the dump dtype (bfloat16 widened to float32)."""
    dtype = numpy_dtype(code)
    if dtype is None:
        raise LayoutError(f"data type {DTYPE_NAMES.get(code, code)} is not supported")
    if dtype == "bfloat16":
        if len(raw) % 2:
            raise LayoutError("bfloat16 data has an odd byte count")
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32)
    if len(raw) % dtype.itemsize:
        raise LayoutError(f"{len(raw)} bytes is not a whole number of {dtype} elements")
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<"))


def format_name(code: int) -> str:
    return FORMATS.get(code & 0xFF, f"format {code & 0xFF}")


def to_original(flat: np.ndarray, shape: list[int], fmt: int, original: list[int]) -> np.ndarray:
    """Device data -> the original (framework) shape when the layout is known; else device shape."""
    shape = [int(d) for d in shape]
    if math.prod(shape) != flat.size:
        raise LayoutError(f"shape {shape} needs {math.prod(shape)} elements, the data holds {flat.size}")
    x = flat.reshape(shape) if shape else flat.reshape(())
    primary = fmt & 0xFF
    if not original:
        return x
    if primary in (NC1HWC0, 12) and len(shape) == 5 and len(original) == 4:
        n, c, h, w = original
        n_, c1, h_, w_, c0 = shape
        if (n_, h_, w_) != (n, h, w) or c1 * c0 < c:
            raise LayoutError(f"NC1HWC0 shape {shape} does not fit original NCHW {original}")
        return x.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, :c]
    if primary in (FRACTAL_Z, 13) and len(shape) == 4 and len(original) == 4:
        n, c, h, w = original
        c1hw, n1, n0, c0 = shape
        if c1hw % (h * w) or n1 * n0 < n:
            raise LayoutError(f"FRACTAL_Z shape {shape} does not fit original NCHW {original}")
        c1 = c1hw // (h * w)
        if c1 * c0 < c:
            raise LayoutError(f"FRACTAL_Z shape {shape} does not fit original NCHW {original}")
        y = x.reshape(c1, h, w, n1, n0, c0).transpose(3, 4, 0, 5, 1, 2)
        return y.reshape(n1 * n0, c1 * c0, h, w)[:n, :c]
    if primary == FRACTAL_NZ and len(shape) >= 4 and len(original) >= 2:
        *batch, w1, h1, h0, w0 = shape
        hh, ww = original[-2:]
        b = math.prod(batch) if batch else 1
        if h1 * h0 < hh or w1 * w0 < ww or math.prod(original[:-2] or [1]) != b:
            raise LayoutError(f"FRACTAL_NZ shape {shape} does not fit original {original}")
        y = x.reshape(b, w1, h1 * h0, w0).transpose(0, 2, 1, 3).reshape(b, h1 * h0, w1 * w0)[:, :hh, :ww]
        return y.reshape(original)
    if math.prod(original) == flat.size and primary in (0, 1, 2, 27, 30):
        return flat.reshape(original)
    return x


def from_original(x: np.ndarray, fmt: int, c0: int = 16) -> np.ndarray:
    """The inverse conversions (framework shape -> device layout), for writers and tests."""
    primary = fmt & 0xFF
    if primary == NC1HWC0:
        n, c, h, w = x.shape
        c1 = -(-c // c0)
        padded = np.zeros((n, c1 * c0, h, w), dtype=x.dtype)
        padded[:, :c] = x
        return np.ascontiguousarray(padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2))
    if primary == FRACTAL_Z:
        n, c, h, w = x.shape
        c1, n1 = -(-c // c0), -(-n // 16)
        padded = np.zeros((n1 * 16, c1 * c0, h, w), dtype=x.dtype)
        padded[:n, :c] = x
        y = padded.reshape(n1, 16, c1, c0, h, w).transpose(2, 4, 5, 0, 1, 3)
        return np.ascontiguousarray(y.reshape(c1 * h * w, n1, 16, c0))
    if primary == FRACTAL_NZ:
        *batch, hh, ww = x.shape
        h1, w1 = -(-hh // 16), -(-ww // 16)
        b = math.prod(batch) if batch else 1
        padded = np.zeros((b, h1 * 16, w1 * 16), dtype=x.dtype)
        padded[:, :hh, :ww] = x.reshape(b, hh, ww)
        y = padded.reshape(b, h1 * 16, w1, 16).transpose(0, 2, 1, 3)
        return np.ascontiguousarray(y.reshape(*batch, w1, h1, 16, 16))
    return x
