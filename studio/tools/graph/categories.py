"""Op categories and their colours (shared by the panel and the SVG export)."""

from __future__ import annotations

from studio.tools.graph.pipeline.plugins import ROLE_LABELS, role_of

_CATEGORY_OPS = {
    "conv": {"Conv", "ConvTranspose", "MatMul", "Gemm", "Conv2D", "Conv3D", "Conv2DBackpropInput", "MatMulV2",
             "BatchMatMul", "BatchMatMulV2", "FullyConnection", "QLinearConv", "QLinearMatMul", "MatMulInteger",
             "ConvInteger", "Einsum", "DepthwiseConv2D", "Deconvolution", "InnerProduct", "Attention",
             "MultiHeadAttention"},
    "activation": {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "PRelu", "Elu", "Selu", "Gelu", "HardSigmoid",
                   "HardSwish", "Softmax", "LogSoftmax", "Softplus", "Softsign", "Mish", "Swish", "Relu6",
                   "Clip", "FastGelu", "SoftmaxV2", "Erf"},
    "norm": {"BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization",
             "LRN", "LpNormalization", "BNInference", "BNInferenceD", "SimplifiedLayerNormalization",
             "SkipLayerNormalization", "RmsNorm", "MeanVarianceNormalization", "L2Normalize"},
    "data": {"Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "GatherND", "GatherElements",
             "Squeeze", "Unsqueeze", "Flatten", "Expand", "Tile", "Pad", "Resize", "Upsample", "Shape",
             "Identity", "Cast", "Constant", "ConstantOfShape", "ScatterND", "ScatterElements", "DepthToSpace",
             "SpaceToDepth", "TransData", "TransposeD", "ConcatD", "ConcatV2", "SplitD", "StridedSlice",
             "StridedSliceD", "ExpandDims", "Pack", "Unpack", "Cast", "Range", "Where", "NonZero",
             "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Pooling", "Data", "NetOutput",
             "ReduceMean", "ReduceSum", "ReduceMax", "TopK", "ArgMax"},
    "control": {"If", "Loop", "Scan", "PartitionedCall", "StatelessIf", "StatelessWhile", "While", "Case",
                "StreamSwitch", "StreamActive", "LabelSet", "LabelGoto", "LabelSwitch", "Switch", "Merge"},
}
_BY_OP = {op: cat for cat, ops in _CATEGORY_OPS.items() for op in ops}

CATEGORY_COLOURS = {
    "conv": "#3d6fb6",        # blue
    "activation": "#b54a3c",  # red
    "norm": "#3f8a4f",        # green
    "data": "#7a6a52",        # brown
    "control": "#8a4f9e",     # purple
    "custom": "#c07a1f",      # orange: NPU / vendor / custom ops
    "other": "#55606e",       # slate
    "group": "#e8ecf2",       # collapsed group (light, dark text)
    "io": "#2d2d2d",          # graph inputs / outputs
    # MindX SDK pipeline elements, by role (studio.tools.graph.pipeline.plugins)
    "source": "#2e5e4e",      # dark teal (clear of the overlays' cyan)
    "decode": "#6b5ca5",      # violet
    "preprocess": "#8c6d31",  # ochre
    "infer": "#3d6fb6",       # blue, as compute ops
    "postprocess": "#4f8a3f", # green
    "osd": "#b0527a",         # rose
    "flow": "#66707c",        # grey
    "sink": "#3a3f47",        # dark
    "unknown": "#c07a1f",     # orange, as custom ops
}
PIPELINE_ROLES = ("source", "decode", "preprocess", "infer", "postprocess", "osd", "flow", "sink", "unknown")
CATEGORY_LABELS = {"conv": "Conv / MatMul", "activation": "Activation", "norm": "Normalisation",
                   "data": "Data movement", "control": "Control flow", "custom": "Custom / NPU",
                   "other": "Other", "group": "Group", "io": "Input / output"}
CATEGORY_LABELS.update(ROLE_LABELS)


def category(op_type: str, domain: str = "") -> str:
    """The colour category of an op type (a pipeline element's role for domain ``mindx``)."""
    if domain == "mindx":
        return role_of(op_type)
    cat = _BY_OP.get(op_type)
    if cat:
        return cat
    if domain and domain not in ("", "ai.onnx", "ai.onnx.ml"):
        return "custom"
    if op_type.startswith(("Fake", "Npu", "NPU", "Ascend", "Fused", "Dynamic", "Aipp")) or op_type.endswith("D"):
        return "custom"
    low = op_type.lower()
    if "conv" in low or "matmul" in low:
        return "conv"
    if "norm" in low:
        return "norm"
    return "other"
