"""The four demo networks and their registry.

Each builder is deterministic: a fixed seed per model and a fixed call order mean the same
serialized bytes on every call. The weights are random (He-initialised, with realistic BatchNorm
statistics), so the outputs are meaningless but numerically well behaved: activations stay near
unit scale and the softmax outputs are not saturated. All models use opset 13 and IR 7.

Inputs are float32 NCHW images normalised to roughly zero mean and unit variance
(e.g. ``pixel / 127.5 - 1``), except the colorization model's ``L`` (see its builder).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from studio.tools.demo.layers import GraphBuilder

if TYPE_CHECKING:
    import onnx

# -- U-Net ------------------------------------------------------------------------------------

UNET_WIDTHS = (16, 32, 64, 128)
UNET_BOTTLENECK = 256


def build_unet() -> onnx.ModelProto:
    """A 4-level U-Net segmenting a 256x256 image into 2 classes (per-pixel softmax).

    Encoder levels are (Conv+BN+ReLU) x2 then MaxPool; the deepest decoder level up-samples with
    ConvTranspose, the others with nearest Resize; every level concatenates its skip connection.
    """
    g = GraphBuilder(seed=1001)
    x = g.input("image", [1, 3, 256, 256])
    skips = []
    for level, width in enumerate(UNET_WIDTHS, start=1):
        x = g.conv_bn_relu(x, width, scope=f"encoder{level}/conv1")
        x = g.conv_bn_relu(x, width, scope=f"encoder{level}/conv2")
        skips.append(x)
        x = g.max_pool(x, name=f"encoder{level}/pool")
    x = g.conv_bn_relu(x, UNET_BOTTLENECK, scope="bottleneck/conv1")
    x = g.conv_bn_relu(x, UNET_BOTTLENECK, scope="bottleneck/conv2")
    for level in range(len(UNET_WIDTHS), 0, -1):
        width = UNET_WIDTHS[level - 1]
        if level == len(UNET_WIDTHS):
            # One learned up-sampling so the graph exercises ConvTranspose as well as Resize.
            x = g.conv_transpose(x, width, name=f"decoder{level}/up/convtranspose")
        else:
            x = g.resize_2x(x, name=f"decoder{level}/up/resize")
        x = g.concat([x, skips[level - 1]], name=f"decoder{level}/concat")
        x = g.conv_bn_relu(x, width, scope=f"decoder{level}/conv1")
        x = g.conv_bn_relu(x, width, scope=f"decoder{level}/conv2")
    x = g.conv(x, 2, k=1, name="head/conv", gain=1.0, centered=True)
    x = g.softmax(x, axis=1, name="head/softmax", output="mask")
    g.output(x, [1, 2, 256, 256])
    return g.make_model("unet", "Demo U-Net: 256x256 image -> 2-class per-pixel softmax mask.")


# -- SSD detector -----------------------------------------------------------------------------

SSD_CLASSES = ("background", "face", "mask")
# (feature map side, anchors per cell) for each detection scale, largest map first.
SSD_SCALES = ((38, 4), (19, 6), (10, 6), (5, 4))
SSD_ANCHORS = sum(side * side * anchors for side, anchors in SSD_SCALES)
"""A = 38*38*4 + 19*19*6 + 10*10*6 + 5*5*4 = 5776 + 2166 + 600 + 100 = 8642 anchors."""


def build_ssd_detector() -> onnx.ModelProto:
    """A face-mask SSD: 300x300 image -> ``boxes`` [1, A, 4] and ``scores`` [1, A, 3].

    A stride-2 backbone reaches 38x38 after three stages, then three more stride-2 convs give the
    19x19, 10x10 and 5x5 maps. Each map gets a box head (anchors*4 channels) and a class head
    (anchors*3), transposed to NHWC and reshaped so that anchors of all scales concatenate along
    axis 1. ``boxes`` are raw regression offsets; ``scores`` are a softmax over
    (background, face, mask). A = 8642 (see ``SSD_ANCHORS``).
    """
    g = GraphBuilder(seed=2002)
    x = g.input("image", [1, 3, 300, 300])
    x = g.conv_bn_relu(x, 16, stride=2, scope="backbone/stage1/conv1")  # 150
    x = g.conv_bn_relu(x, 32, stride=2, scope="backbone/stage2/conv1")  # 75
    x = g.conv_bn_relu(x, 32, scope="backbone/stage2/conv2")
    x = g.conv_bn_relu(x, 64, stride=2, scope="backbone/stage3/conv1")  # 38
    x = g.conv_bn_relu(x, 64, scope="backbone/stage3/conv2")
    features = [x]
    for stage, width in ((4, 128), (5, 128), (6, 128)):  # 19, 10, 5
        x = g.conv_bn_relu(x, width, stride=2, scope=f"backbone/stage{stage}/conv1")
        features.append(x)

    boxes, scores = [], []
    num_classes = len(SSD_CLASSES)
    for i, (feature, (_, anchors)) in enumerate(zip(features, SSD_SCALES), start=1):
        for kind, per_anchor, sink in (("box", 4, boxes), ("cls", num_classes, scores)):
            scope = f"head_{kind}_{i}"
            y = g.conv(feature, anchors * per_anchor, name=f"{scope}/conv", gain=1.0,
                           centered=True)
            # NCHW -> NHWC so each cell's anchors are contiguous, as SSD decoders expect.
            y = g.transpose(y, [0, 2, 3, 1], name=f"{scope}/transpose")
            sink.append(g.reshape(y, [1, -1, per_anchor], name=f"{scope}/reshape"))
    g.concat(boxes, axis=1, name="head_box/concat", output="boxes")
    logits = g.concat(scores, axis=1, name="head_cls/concat")
    g.softmax(logits, axis=-1, name="head_cls/softmax", output="scores")
    g.output("boxes", [1, SSD_ANCHORS, 4])
    g.output("scores", [1, SSD_ANCHORS, num_classes])
    return g.make_model("ssd_detector", "Demo face-mask SSD: 300x300 image -> "
                        f"{SSD_ANCHORS} anchors x (4 box offsets, 3 class scores).")


# -- colorization -----------------------------------------------------------------------------

AB_RANGE = 110.0


def build_colorization() -> onnx.ModelProto:
    """Predict the Lab ``ab`` channels [1,2,224,224] from lightness ``L`` [1,1,224,224].

    ``L`` is expected as ``L / 50 - 1`` (Lab lightness 0..100 mapped to -1..1). The encoder
    downsamples 3 times to 28x28, two dilated convs widen the receptive field there, and a
    Resize decoder returns to 224x224; Tanh * 110 bounds the output to the ab range.
    """
    g = GraphBuilder(seed=3003)
    x = g.input("L", [1, 1, 224, 224])
    x = g.conv_bn_relu(x, 32, scope="encoder1/conv1")  # 224
    x = g.conv_bn_relu(x, 32, stride=2, scope="encoder1/conv2")  # 112
    x = g.conv_bn_relu(x, 64, stride=2, scope="encoder2/conv1")  # 56
    x = g.conv_bn_relu(x, 128, stride=2, scope="encoder3/conv1")  # 28
    x = g.conv_bn_relu(x, 128, scope="middle/dilated1", dilation=2)
    x = g.conv_bn_relu(x, 128, scope="middle/dilated2", dilation=2)
    for level, width in ((3, 64), (2, 32), (1, 16)):  # 56, 112, 224
        x = g.resize_2x(x, name=f"decoder{level}/up/resize")
        x = g.conv_bn_relu(x, width, scope=f"decoder{level}/conv1")
    x = g.conv(x, 2, name="head/conv", gain=1.0, centered=True)
    x = g.tanh(x, name="head/tanh")
    x = g.mul_scalar(x, AB_RANGE, name="head/mul", output="ab")
    g.output(x, [1, 2, 224, 224])
    return g.make_model("colorization", "Demo colorization: L [1,1,224,224] -> ab [1,2,224,224]"
                        " in [-110, 110].")


# -- classifier -------------------------------------------------------------------------------

CLASSIFIER_CLASSES = 10


def build_classifier() -> onnx.ModelProto:
    """A small CNN: 224x224 image -> ``probabilities`` [1, 10] (softmax over 10 classes)."""
    g = GraphBuilder(seed=4004)
    x = g.input("image", [1, 3, 224, 224])
    for block, width in enumerate((16, 32, 64, 128), start=1):  # 112, 56, 28, 14
        x = g.conv_bn_relu(x, width, stride=2, scope=f"block{block}/conv1")
        x = g.conv_bn_relu(x, width, scope=f"block{block}/conv2")
    g.classifier_head(x, CLASSIFIER_CLASSES)
    return g.make_model("classifier", "Demo classifier: 224x224 image -> 10 class probabilities.")


# -- registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoModel:
    """One entry of :data:`DEMO_MODELS`: how to build a demo model and what it looks like.

    ``inputs`` and ``outputs`` map tensor names to their fixed shapes, in graph order.
    """

    name: str
    file_name: str
    description: str
    build: Callable[[], onnx.ModelProto] = field(repr=False)
    inputs: dict[str, tuple]
    outputs: dict[str, tuple]


DEMO_MODELS: dict[str, DemoModel] = {
    model.name: model
    for model in (
        DemoModel("unet", "unet.onnx",
                  "4-level U-Net segmentation: 2-class softmax mask per pixel.",
                  build_unet, {"image": (1, 3, 256, 256)}, {"mask": (1, 2, 256, 256)}),
        DemoModel("ssd_detector", "ssd_detector.onnx",
                  f"Face-mask SSD detector, 4 scales, {SSD_ANCHORS} anchors, classes "
                  f"{', '.join(SSD_CLASSES)}.",
                  build_ssd_detector, {"image": (1, 3, 300, 300)},
                  {"boxes": (1, SSD_ANCHORS, 4), "scores": (1, SSD_ANCHORS, len(SSD_CLASSES))}),
        DemoModel("colorization", "colorization.onnx",
                  "Encoder-decoder with dilated convs: Lab lightness L -> ab in [-110, 110].",
                  build_colorization, {"L": (1, 1, 224, 224)}, {"ab": (1, 2, 224, 224)}),
        DemoModel("classifier", "classifier.onnx",
                  "Small CNN classifier: GlobalAveragePool + Gemm + Softmax over 10 classes.",
                  build_classifier, {"image": (1, 3, 224, 224)},
                  {"probabilities": (1, CLASSIFIER_CLASSES)}),
    )
}
