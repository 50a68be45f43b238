"""Graph passes of the local conversion, each recording what it did for the report.

Every pass takes a :class:`~studio.tools.convert.passes.context.PassContext` (the model plus the
provenance of every node) and returns the fusions it applied. Passes are switched by name: our
names, or ATC's fusion pass names that map to them (see :data:`ATC_PASS_NAMES`).
"""

from __future__ import annotations

from studio.tools.convert.passes.context import PassContext, Fusion
from studio.tools.convert.passes.conv_fusions import fuse_conv_add, fuse_conv_bn, fuse_conv_mul, fuse_matmul_add
from studio.tools.convert.passes.folding import fold_constants, lift_constants
from studio.tools.convert.passes.identity import eliminate_identity

# (our name, function, what it does) in the order they run; constant lifting always runs first.
PASSES = (
    ("IdentityElimination", eliminate_identity, "remove Identity and inference-time Dropout"),
    ("ConstantFolding", fold_constants, "compute nodes whose inputs are all constants"),
    ("ConvBnFusion", fuse_conv_bn, "fold BatchNormalization into the Conv before it"),
    ("ConvAddFusion", fuse_conv_add, "fold a per-channel constant Add into the Conv bias"),
    ("ConvMulFusion", fuse_conv_mul, "fold a per-channel constant Mul into the Conv weights"),
    ("MatMulAddFusion", fuse_matmul_add, "MatMul + bias Add on 2-D inputs -> Gemm"),
)
PASS_NAMES = tuple(name for name, _, _ in PASSES)

# ATC (FE/GE) fusion pass names -> ours, where the pass does the same rewrite.
ATC_PASS_NAMES = {
    "ConvBatchnormFusionPass": "ConvBnFusion",
    "BatchNormBnInferFusionPass": "ConvBnFusion",
    "AABiasaddConvFusion": "ConvAddFusion",
    "ConvBiasaddFusionPass": "ConvAddFusion",
    "ConvScaleFusionPass": "ConvMulFusion",
    "ConstantFoldingPass": "ConstantFolding",
    "IdentityEliminationPass": "IdentityElimination",
    "MatMulBiasAddFusionPass": "MatMulAddFusion",
}

__all__ = ["PASSES", "PASS_NAMES", "ATC_PASS_NAMES", "PassContext", "Fusion", "lift_constants"]
