"""ATC's AIPP configuration (``--insert_op_conf``): parse, check, write, and apply with NumPy.

The file is protobuf text of ``domi.InsertNewOps``: one or more ``aipp_op { key : value }``
blocks with ``#`` comments. Every error names the line. :meth:`AippOp.apply` is the reference
implementation of the hardware's order of work — channel swap, crop, colour space conversion,
normalisation, padding — used to check the ONNX graph that :mod:`aipp_insert` builds.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.formats import CONVERT, FileFormat, path_only
from studio.tools.convert.atc_files import load_atc_file

# Channels of the raw image per input format (what the NPU model takes, NHWC uint8).
FORMAT_CHANNELS = {"YUV420SP_U8": 3, "XRGB8888_U8": 4, "RGB888_U8": 3, "YUV400_U8": 1}
ALL_FORMATS = ("YUV420SP_U8", "XRGB8888_U8", "RGB888_U8", "YUV400_U8", "NC1HWC0DI_FP16", "NC1HWC0DI_S8",
               "ARGB8888_U8", "YUYV_U8", "YUV422SP_U8", "AYUV444_U8", "RAW10", "RAW12", "RAW16", "RAW24",
               "RGB16", "RGB20", "RGB24", "RGB8_IR", "RGB16_IR", "RGB24_IR")
JPEG_YUV2RGB = ((256, 0, 359), (256, -88, -183), (256, 454, 0))

_BOOL = {"true": True, "false": False, "1": True, "0": False}
# key -> kind; kinds: bool, int, float, enum, str
_KEYS: dict[str, str] = {
    "aipp_mode": "mode", "related_input_rank": "int", "related_input_name": "str", "input_edge_idx": "int",
    "max_src_image_size": "int", "support_rotation": "bool", "input_format": "format",
    "csc_switch": "bool", "rbuv_swap_switch": "bool", "ax_swap_switch": "bool", "single_line_mode": "bool",
    "cpadding_value": "float", "src_image_size_w": "int", "src_image_size_h": "int",
    "crop": "bool", "load_start_pos_w": "int", "load_start_pos_h": "int", "crop_size_w": "int", "crop_size_h": "int",
    "resize": "bool", "resize_output_w": "int", "resize_output_h": "int",
    "padding": "bool", "left_padding_size": "int", "right_padding_size": "int", "top_padding_size": "int",
    "bottom_padding_size": "int", "padding_value": "float", "raw_rgbir_to_f16_n": "int",
    **{f"mean_chn_{i}": "int" for i in range(4)},
    **{f"min_chn_{i}": "float" for i in range(4)},
    **{f"var_reci_chn_{i}": "float" for i in range(4)},
    **{f"matrix_r{r}c{c}": "int" for r in range(3) for c in range(3)},
    **{f"output_bias_{i}": "int" for i in range(3)},
    **{f"input_bias_{i}": "int" for i in range(3)},
}


@dataclass
class AippOp:
    """One ``aipp_op`` block. Defaults are ATC's (identity normalisation, no crop, no padding)."""

    aipp_mode: str = "static"
    related_input_rank: int = 0
    related_input_name: str = ""
    input_format: str = ""
    csc_switch: bool = False
    rbuv_swap_switch: bool = False
    ax_swap_switch: bool = False
    src_image_size_w: int = 0
    src_image_size_h: int = 0
    crop: bool = False
    load_start_pos_w: int = 0
    load_start_pos_h: int = 0
    crop_size_w: int = 0
    crop_size_h: int = 0
    padding: bool = False
    left_padding_size: int = 0
    right_padding_size: int = 0
    top_padding_size: int = 0
    bottom_padding_size: int = 0
    padding_value: float = 0.0
    mean: list[float] = field(default_factory=lambda: [0.0] * 4)
    min: list[float] = field(default_factory=lambda: [0.0] * 4)
    var_reci: list[float] = field(default_factory=lambda: [1.0] * 4)
    matrix: list[list[int]] = field(default_factory=lambda: [list(r) for r in JPEG_YUV2RGB])
    input_bias: list[int] = field(default_factory=lambda: [0, 128, 128])
    output_bias: list[int] = field(default_factory=lambda: [0, 0, 0])
    extras: dict[str, object] = field(default_factory=dict)  # keys we keep but do not model
    line: int = 0

    @property
    def channels(self) -> int:
        """Channels of the raw input (4 for XRGB)."""
        return FORMAT_CHANNELS.get(self.input_format, 3)

    @property
    def out_channels(self) -> int:
        """Channels handed to the model: XRGB drops X; YUV400 stays 1."""
        return 1 if self.input_format == "YUV400_U8" else 3

    def src_size(self, model_hw: tuple[int, int] | None = None) -> tuple[int, int]:
        """(H, W) of the raw image; 0 in the file means "the model's input size" (minus padding)."""
        h, w = self.src_image_size_h, self.src_image_size_w
        if (not h or not w) and model_hw is not None:
            ch, cw = model_hw[0] - self.top_padding_size - self.bottom_padding_size, \
                model_hw[1] - self.left_padding_size - self.right_padding_size
            if self.crop and self.crop_size_h and self.crop_size_w:
                ch, cw = self.load_start_pos_h + self.crop_size_h, self.load_start_pos_w + self.crop_size_w
            h, w = h or ch, w or cw
        return h, w

    def output_size(self, src_hw: tuple[int, int]) -> tuple[int, int]:
        """(H, W) after crop and padding: what the model input must be."""
        h, w = src_hw
        if self.crop:
            h = self.crop_size_h or h - self.load_start_pos_h
            w = self.crop_size_w or w - self.load_start_pos_w
        if self.padding:
            h += self.top_padding_size + self.bottom_padding_size
            w += self.left_padding_size + self.right_padding_size
        return h, w

    def raw_shape(self, src_hw: tuple[int, int], batch: int = 1) -> tuple[int, ...]:
        """The raw uint8 tensor the converted model takes: NHWC, YUV420SP as [N, H*3/2, W, 1]."""
        h, w = src_hw
        if self.input_format == "YUV420SP_U8":
            return (batch, h * 3 // 2, w, 1)
        return (batch, h, w, self.channels)

    # ------------------------------------------------------------------ reference maths
    def apply(self, raw: np.ndarray) -> np.ndarray:
        """Pre-process a raw NHWC uint8 batch exactly as the inserted graph does; float32 NHWC out."""
        x = self.unpack(raw)
        if self.crop:
            h0, w0 = self.load_start_pos_h, self.load_start_pos_w
            hh = self.crop_size_h or x.shape[1] - h0
            ww = self.crop_size_w or x.shape[2] - w0
            x = x[:, h0:h0 + hh, w0:w0 + ww, :]
        if self.csc_switch:
            m = np.asarray(self.matrix, np.float32)
            ib = np.asarray(self.input_bias, np.float32)
            ob = np.asarray(self.output_bias, np.float32)
            x3 = x if x.shape[-1] == 3 else np.concatenate([x, np.broadcast_to(ib[1:], x.shape[:-1] + (2,))], -1)
            y = np.floor(np.einsum("ij,nhwj->nhwi", m, x3 - ib) / 256.0) + ob
            x = np.clip(y, 0, 255).astype(np.float32)
            if self.out_channels == 1:
                x = x[..., :1]
        c = x.shape[-1]
        mean = np.asarray(self.mean[:c], np.float32)
        mn = np.asarray(self.min[:c], np.float32)
        var = np.asarray(self.var_reci[:c], np.float32)
        x = (x - mean - mn) * var
        if self.padding:
            pads = ((0, 0), (self.top_padding_size, self.bottom_padding_size),
                    (self.left_padding_size, self.right_padding_size), (0, 0))
            x = np.pad(x, pads, constant_values=self.padding_value)
        return x.astype(np.float32)

    def unpack(self, raw: np.ndarray) -> np.ndarray:
        """Raw bytes to float NHWC channels (YUV420SP upsampled), after the channel swaps."""
        raw = np.asarray(raw)
        if self.input_format == "YUV420SP_U8":
            n, rows, w, _ = raw.shape
            h = rows * 2 // 3
            y = raw[:, :h, :, 0].astype(np.float32)
            uv = raw[:, h:, :, 0].reshape(n, h // 2, w // 2, 2).astype(np.float32)
            uv = uv.repeat(2, axis=1).repeat(2, axis=2)
            if self.rbuv_swap_switch:
                uv = uv[..., ::-1]
            return np.concatenate([y[..., None], uv], axis=-1)
        x = raw.astype(np.float32)
        if self.input_format == "XRGB8888_U8":
            x = x[..., :3] if self.ax_swap_switch else x[..., 1:4]
        if self.rbuv_swap_switch and x.shape[-1] == 3:
            x = x[..., ::-1]
        return x

    # ------------------------------------------------------------------ text
    def to_text(self) -> str:
        """The block as ATC reads it (only what differs from the defaults, plus mode and format)."""
        lines = ["aipp_op {", f"    aipp_mode : {self.aipp_mode}"]
        default = AippOp()
        skip = {"aipp_mode", "mean", "min", "var_reci", "matrix", "input_bias", "output_bias", "extras", "line"}
        for f in fields(self):
            if f.name in skip:
                continue
            value = getattr(self, f.name)
            if value != getattr(default, f.name) or f.name == "input_format":
                lines.append(f"    {f.name} : {_fmt(value)}")
        for i in range(self.channels if self.input_format else 3):
            for key, arr, dflt in (("mean_chn", self.mean, 0.0), ("min_chn", self.min, 0.0),
                                   ("var_reci_chn", self.var_reci, 1.0)):
                if arr[i] != dflt:
                    lines.append(f"    {key}_{i} : {_fmt(arr[i])}")
        if self.csc_switch:
            for r in range(3):
                for c in range(3):
                    lines.append(f"    matrix_r{r}c{c} : {self.matrix[r][c]}")
            for i in range(3):
                lines.append(f"    input_bias_{i} : {self.input_bias[i]}")
            for i in range(3):
                if self.output_bias[i]:
                    lines.append(f"    output_bias_{i} : {self.output_bias[i]}")
        for key, value in self.extras.items():
            lines.append(f"    {key} : {_fmt(value)}")
        return "\n".join(lines + ["}"]) + "\n"


def _fmt(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if value != int(value) else str(int(value)) if abs(value) < 1e15 else repr(value)
    return str(value)


@dataclass
class AippConfig:
    """A parsed AIPP file: its ``aipp_op`` blocks, in order."""

    ops: list[AippOp]
    path: Path | None = None

    def op_for(self, input_index: int, input_name: str) -> AippOp | None:
        """The block for a model input, matched by related_input_name or related_input_rank."""
        for op in self.ops:
            if op.related_input_name and op.related_input_name == input_name:
                return op
        for op in self.ops:
            if not op.related_input_name and op.related_input_rank == input_index:
                return op
        return None

    def to_text(self) -> str:
        """The whole file."""
        return "\n".join(op.to_text() for op in self.ops)


_LINE = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<value>.*?)\s*;?$")


def parse_aipp(text: str, where: str | Path = "AIPP config") -> AippConfig:
    """Parse AIPP text; every error names ``where`` and the line."""
    ops: list[AippOp] = []
    current: AippOp | None = None
    seen: set[str] = set()
    depth_other = 0
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.split("#", 1)[0].strip()
        if not line:
            continue
        loc = f"{where}, line {number}"
        if re.fullmatch(r"(aipp_op|multi_shape_op)\s*\{", line) or re.fullmatch(r"(aipp_op|multi_shape_op)\s*:?\s*\{", line):
            if current is not None or depth_other:
                raise UserError("A block opens inside another block", loc, "Close the previous block with '}' first.")
            if line.startswith("multi_shape_op"):
                depth_other = 1
                continue
            current, seen = AippOp(line=number), set()
            continue
        if line == "}":
            if depth_other:
                depth_other = 0
                continue
            if current is None:
                raise UserError("'}' without an open aipp_op block", loc, "Remove the extra '}'.")
            _check_op(current, seen, f"{where}, block at line {current.line}")
            ops.append(current)
            current = None
            continue
        match = _LINE.match(line)
        if not match:
            raise UserError(f"Cannot read {line!r}: expected 'key : value'", loc,
                            "Each line inside aipp_op { ... } is 'key : value'; comments start with '#'.")
        if depth_other:
            continue
        if current is None:
            raise UserError(f"{match['key']!r} is outside an aipp_op block", loc,
                            "Put settings inside 'aipp_op { ... }'.")
        _set(current, match["key"], match["value"], loc, seen)
    if current is not None or depth_other:
        raise UserError("The file ends inside a block: '}' is missing", f"{where}, line {number if text else 0}",
                        "Close every 'aipp_op {' with '}'.")
    if not ops:
        raise UserError("No aipp_op block found", where, "An AIPP config holds at least one 'aipp_op { ... }' block.")
    return AippConfig(ops)


def load_aipp(path: Path | str) -> AippConfig:
    """Read and parse an AIPP file."""
    return load_atc_file(path, "AIPP config", "--insert_op_conf", parse_aipp)


def _set(op: AippOp, key: str, value: str, loc: str, seen: set[str]) -> None:
    kind = _KEYS.get(key)
    if kind is None:
        close = difflib.get_close_matches(key, list(_KEYS), n=1)
        raise UserError(f"Unknown AIPP field {key!r}", loc,
                        f"Did you mean {close[0]!r}?" if close else "See ATC's AIPP config template for the fields.")
    value = value.strip().strip('"')
    if key in seen and not key.startswith(("var_reci", "matrix", "input_bias", "output_bias")):
        raise UserError(f"{key!r} is set twice in this block", loc, "Keep one line per field.")
    seen.add(key)
    try:
        if kind == "bool":
            if value.lower() not in _BOOL:
                raise ValueError("true or false")
            parsed: object = _BOOL[value.lower()]
        elif kind == "int":
            parsed = int(value)
        elif kind == "float":
            parsed = float(value)
        elif kind == "mode":
            if value not in ("static", "dynamic"):
                raise ValueError("static or dynamic")
            parsed = value
        elif kind == "format":
            if value not in ALL_FORMATS:
                close = difflib.get_close_matches(value, ALL_FORMATS, n=1)
                raise ValueError("one of " + ", ".join(FORMAT_CHANNELS) + (f" (did you mean {close[0]}?)" if close else ""))
            parsed = value
        else:
            parsed = value
    except ValueError as exc:
        expected = str(exc) if kind in ("bool", "mode", "format") else f"a{'n integer' if kind == 'int' else ' number'}"
        raise UserError(f"Value {value!r} for {key!r} is invalid (E10052)", loc, f"Use {expected}.") from None
    channel = re.fullmatch(r"(mean|min|var_reci)_chn_(\d)", key)
    matrix = re.fullmatch(r"matrix_r(\d)c(\d)", key)
    bias = re.fullmatch(r"(input|output)_bias_(\d)", key)
    if channel:
        getattr(op, channel[1])[int(channel[2])] = float(parsed)
    elif matrix:
        op.matrix[int(matrix[1])][int(matrix[2])] = int(parsed)
    elif bias:
        getattr(op, f"{bias[1]}_bias")[int(bias[2])] = int(parsed)
    elif key in {f.name for f in fields(AippOp)}:
        setattr(op, key, parsed)
    else:
        op.extras[key] = parsed


def _check_op(op: AippOp, seen: set[str], loc: str) -> None:
    """ATC's rules for one block (the subset that decides whether it can run)."""
    def bad(what: str, fix: str) -> UserError:
        return UserError(f"AIPP configuration is invalid: {what} (E10052)", loc, fix)

    if "aipp_mode" not in seen:
        raise bad("aipp_mode is missing", "Add 'aipp_mode : static' (or dynamic).")
    if op.aipp_mode == "dynamic":
        return
    if not op.input_format:
        raise bad("a static block needs input_format", "Add e.g. 'input_format : RGB888_U8'.")
    w, h = op.src_image_size_w, op.src_image_size_h
    if w and not 2 <= w <= 4096 or h and not 1 <= h <= 4096:
        raise bad(f"src_image_size {w}x{h} is out of range", "W must be 2..4096 and H 1..4096 (or 0 for the model size).")
    if op.input_format == "YUV420SP_U8" and (w % 2 or h % 2):
        raise bad(f"YUV420SP needs an even src_image_size, got {w}x{h}", "Use even width and height.")
    if op.crop:
        if op.input_format == "YUV420SP_U8" and (op.load_start_pos_w % 2 or op.load_start_pos_h % 2):
            raise bad("YUV420SP needs even load_start_pos_w/h", "Use even crop start positions.")
        if w and op.load_start_pos_w + op.crop_size_w > w or h and op.load_start_pos_h + op.crop_size_h > h:
            raise bad("the crop window goes past the source image",
                      "Keep load_start_pos + crop_size within src_image_size.")
    if op.padding:
        for side in ("left", "right", "top", "bottom"):
            if not 0 <= getattr(op, f"{side}_padding_size") <= 32:
                raise bad(f"{side}_padding_size must be 0..32", "Use at most 32 pixels of padding per side.")
    if op.csc_switch and op.input_format == "RGB888_U8" and op.matrix == [list(r) for r in JPEG_YUV2RGB] \
            and not any(k.startswith("matrix") for k in seen):
        raise bad("csc_switch is on but no matrix is given for RGB input", "Give matrix_r0c0..r2c2 for RGB->YUV, or turn csc_switch off.")


def match_aipp(path: Path, head: bytes) -> bool:
    """An AIPP configuration: an ``aipp_op {`` block."""
    return bool(re.search(rb"^\s*aipp_op\s*\{", head, re.MULTILINE))


AIPP_CFG = FileFormat("aipp_cfg", "AIPP configuration", CONVERT, match_aipp, path_only(load_aipp))
