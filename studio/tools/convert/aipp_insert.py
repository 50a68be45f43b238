"""Insert AIPP pre-processing into an ONNX graph, so it takes the raw uint8 image the NPU takes.

For each model input with an ``aipp_op`` block, a new graph input of the same name (uint8 NHWC;
YUV420SP as [N, H*3/2, W, 1]) feeds the steps in hardware order — channel swap, crop, colour
space conversion (integer matrix, ``>> 8`` as floor(x / 256), saturated to 0..255),
normalisation ``(x - mean - min) * var_reci``, padding — then the layout and type the original
input had. :meth:`studio.tools.convert.aipp.AippOp.apply` is the NumPy twin used to check it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from studio.core.errors import UserError
from studio.tools.convert.aipp import AippConfig, AippOp

if TYPE_CHECKING:
    import onnx


@dataclass
class AippInsertion:
    """What was inserted for one input: the raw input's shape, the nodes added, the layout used."""

    input_name: str
    raw_shape: tuple[int, ...]
    layout: str
    nodes: list[str]
    steps: list[str]
    op: AippOp
    protos: list = field(default_factory=list, repr=False)  # the NodeProtos, placed by insert_aipp

    def __json__(self) -> dict:
        """The conversion report's ``aipp`` entry (:func:`studio.core.serial.to_json`)."""
        return {"input": self.input_name, "raw_shape": list(self.raw_shape), "raw_dtype": "uint8",
                "layout": self.layout, "input_format": self.op.input_format, "steps": self.steps,
                "nodes": self.nodes}


class _Builder:
    """Adds nodes and constants with a common name prefix."""

    def __init__(self, model: onnx.ModelProto, prefix: str):
        self.model, self.prefix, self.nodes = model, prefix, []
        self._count = 0

    def const(self, role: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        name = f"{self.prefix}/const/{role}"
        self.model.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], role: str, **attrs) -> str:
        from onnx import helper

        name = f"{self.prefix}/{role}"
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name


def _i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def insert_aipp(model: onnx.ModelProto, config: AippConfig) -> list[AippInsertion]:
    """Rewrite ``model`` in place; returns one :class:`AippInsertion` per pre-processed input."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 11:
        raise UserError(f"AIPP insertion needs opset 11 or newer; the model has opset {opset}",
                        "model opset_import", "Export the model again with opset 11..18 (the range ATC accepts).")
    initializers = {i.name for i in model.graph.initializer}
    inputs = [v for v in model.graph.input if v.name not in initializers]
    done: list[AippInsertion] = []
    used = set()
    for index, value in enumerate(inputs):
        op = config.op_for(index, value.name)
        if op is None:
            continue
        used.add(id(op))
        if op.aipp_mode != "static":
            raise UserError(f"Dynamic AIPP for input {value.name!r} takes its parameters at run time; "
                            "a local ONNX model cannot", f"{config.path or 'AIPP config'}, block at line {op.line}",
                            "Use 'aipp_mode : static' for local conversion (dynamic AIPP is for ATC only).")
        done.append(_insert_one(model, value, op, config))
    for op in config.ops:
        if id(op) not in used and op.aipp_mode == "static":
            target = op.related_input_name or f"input #{op.related_input_rank}"
            raise UserError(f"The AIPP block at line {op.line} is for {target}, which the model does not have",
                            config.path or "AIPP config",
                            f"Set related_input_rank (0..{len(inputs) - 1}) or related_input_name to a model input: "
                            + ", ".join(v.name for v in inputs))
    # Inserted nodes must come first (topological order): they feed the original graph.
    new_nodes = [n for ins in done for n in ins.protos]
    old = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(new_nodes + old)
    return done


def _insert_one(model: onnx.ModelProto, value, op: AippOp, config: AippConfig) -> AippInsertion:
    from onnx import TensorProto, helper

    name = value.name
    where = f"{config.path or 'AIPP config'}, block at line {op.line}"
    tensor = value.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else 0 for d in tensor.shape.dim]
    if len(dims) != 4:  # no image: no input shape makes AIPP fit, so do not suggest one
        raise UserError(f"AIPP pre-processes images, and input {name!r} is no image: it has {len(dims)} dim(s) "
                        f"{dims}, an image input has 4 (N, C, H, W or N, H, W, C)", where,
                        "Convert this model without AIPP (untick AIPP on the Converter's page 2, or drop "
                        "--insert-op-conf); AIPP is for models that take pictures.")
    if 0 in dims:
        raise UserError(f"AIPP needs a static 4-D image input; {name!r} has shape {dims}", where,
                        f'Fix the shape first with --input_shape="{name}:1,3,H,W".')
    if op.input_format not in ("RGB888_U8", "XRGB8888_U8", "YUV420SP_U8", "YUV400_U8"):
        raise UserError(f"Input format {op.input_format} cannot be converted locally", where,
                        "Use RGB888_U8, XRGB8888_U8, YUV420SP_U8 or YUV400_U8.")
    out_c = op.out_channels if op.csc_switch or op.input_format != "YUV420SP_U8" else 3
    if dims[1] == out_c and dims[3] != out_c:
        layout, (n, _, mh, mw) = "NCHW", dims
    elif dims[3] == out_c:
        layout, (n, mh, mw, _) = "NHWC", dims
    else:
        raise UserError(f"AIPP gives {out_c} channel(s) but input {name!r} has shape {dims}", where,
                        "Check input_format (RGB888/XRGB/YUV420SP give 3 channels, YUV400 gives 1) and the model input.")
    src = op.src_size((mh, mw))
    got = op.output_size(src)
    if got != (mh, mw):
        raise UserError(f"AIPP produces {got[0]}x{got[1]} but input {name!r} is {mh}x{mw} (H x W)", where,
                        "Make src_image_size (minus crop, plus padding) match the model input, "
                        "or fix the model size with --input_shape.")
    raw_shape = op.raw_shape(src, n)
    b = _Builder(model, f"aipp/{name}")
    steps = []
    x = b.node("Cast", [name], "cast_in", to=TensorProto.FLOAT)
    h, w = src
    if op.input_format == "YUV420SP_U8":
        y = b.node("Slice", [x, b.const("y_start", _i64(0)), b.const("y_end", _i64(h)), b.const("rows", _i64(1))], "y")
        uv = b.node("Slice", [x, b.const("uv_start", _i64(h)), b.const("uv_end", _i64(h * 3 // 2)), f"aipp/{name}/const/rows"], "uv")
        uv = b.node("Reshape", [uv, b.const("uv_split", _i64(n, h // 2, 1, w // 2, 1, 2))], "uv_split")
        uv = b.node("Expand", [uv, b.const("uv_up", _i64(n, h // 2, 2, w // 2, 2, 2))], "uv_upsample")
        uv = b.node("Reshape", [uv, b.const("uv_full", _i64(n, h, w, 2))], "uv_full")
        if op.rbuv_swap_switch:
            uv = b.node("Gather", [uv, b.const("vu", _i64(1, 0))], "uv_swap", axis=3)
            steps.append("swap U and V (NV21)")
        x = b.node("Concat", [y, uv], "yuv", axis=3)
        steps.append("split NV12 planes, upsample UV 2x")
    else:
        if op.input_format == "XRGB8888_U8":
            start = 0 if op.ax_swap_switch else 1
            x = b.node("Slice", [x, b.const("rgb_start", _i64(start)), b.const("rgb_end", _i64(start + 3)),
                                 b.const("c_axis", _i64(3))], "drop_x")
            steps.append("drop the X channel")
        if op.rbuv_swap_switch and op.input_format != "YUV400_U8":
            x = b.node("Gather", [x, b.const("swap", _i64(2, 1, 0))], "rb_swap", axis=3)
            steps.append("swap R and B")
    if op.crop:
        hh = op.crop_size_h or h - op.load_start_pos_h
        ww = op.crop_size_w or w - op.load_start_pos_w
        x = b.node("Slice", [x, b.const("crop_start", _i64(op.load_start_pos_h, op.load_start_pos_w)),
                             b.const("crop_end", _i64(op.load_start_pos_h + hh, op.load_start_pos_w + ww)),
                             b.const("crop_axes", _i64(1, 2))], "crop")
        steps.append(f"crop {hh}x{ww} at ({op.load_start_pos_h}, {op.load_start_pos_w})")
    if op.csc_switch:
        m = np.asarray(op.matrix, np.float32)
        cin = 1 if op.input_format == "YUV400_U8" else 3
        x = b.node("Sub", [x, b.const("csc_in_bias", np.asarray(op.input_bias[:cin], np.float32))], "csc_in_bias")
        x = b.node("MatMul", [x, b.const("csc_matrix_t", np.ascontiguousarray(m[:, :cin].T) / 256.0)], "csc_matrix")
        x = b.node("Floor", [x], "csc_shift")
        x = b.node("Add", [x, b.const("csc_out_bias", np.asarray(op.output_bias, np.float32))], "csc_out_bias")
        x = b.node("Max", [x, b.const("zero", np.float32(0))], "csc_low")
        x = b.node("Min", [x, b.const("u8max", np.float32(255))], "csc_high")
        if op.out_channels == 1:
            x = b.node("Slice", [x, b.const("c0_start", _i64(0)), b.const("c0_end", _i64(1)),
                                 b.const("c0_axis", _i64(3))], "csc_gray")
        steps.append("colour space conversion (matrix >> 8)")
    c = op.out_channels
    offset = np.asarray(op.mean[:c], np.float32) + np.asarray(op.min[:c], np.float32)
    scale = np.asarray(op.var_reci[:c], np.float32)
    if offset.any():
        x = b.node("Sub", [x, b.const("mean_min", offset)], "sub_mean_min")
    if (scale != 1).any():
        x = b.node("Mul", [x, b.const("var_reci", scale)], "mul_var_reci")
    if offset.any() or (scale != 1).any():
        steps.append("normalise (x - mean - min) * var_reci")
    if op.padding:
        pads = _i64(0, op.top_padding_size, op.left_padding_size, 0, 0, op.bottom_padding_size, op.right_padding_size, 0)
        x = b.node("Pad", [x, b.const("pads", pads), b.const("pad_value", np.float32(op.padding_value))], "pad")
        steps.append("pad")
    if layout == "NCHW":
        x = b.node("Transpose", [x], "to_nchw", perm=[0, 3, 1, 2])
    if tensor.elem_type != TensorProto.FLOAT:
        x = b.node("Cast", [x], "cast_out", to=tensor.elem_type)
    # The original input name now belongs to the raw image; the graph reads the AIPP output.
    for node in model.graph.node:
        for i, inp in enumerate(node.input):
            if inp == name:
                node.input[i] = x
    for out in model.graph.output:
        if out.name == name:
            raise UserError(f"Input {name!r} is also a graph output; AIPP cannot rename it", where,
                            "Remove the input from the outputs before converting.")
    value.CopyFrom(helper.make_tensor_value_info(name, TensorProto.UINT8, list(raw_shape)))
    return AippInsertion(name, raw_shape, layout, [n.name for n in b.nodes], steps, op, b.nodes)
