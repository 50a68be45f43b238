"""Two demo models made to show a journey each, beside the four demo networks.

* ``fp16_frontend.onnx`` — an audio front-end (frames -> DFT -> power -> mel -> log) that goes
  wrong in FP16 the two ways real ones do: loud frames overflow (the power of a 256-point DFT of
  unit-scale samples with a 20 dB gain passes 65,504) and silent frames underflow (the 1e-10 floor
  added before the log is 0 in FP16, so log(0) = -inf). With the seeded random input the checks
  use, the first op that drifts is the power; ``inputs/frames_with_silence.npy`` shows the second.
* ``mish_cnn.onnx`` — a small classifier whose activations are Mish written out as
  Softplus -> Tanh -> Mul, as exporters write it: the advisor's closed loop finds, applies and
  measures its fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from studio.tools.demo.layers import GraphBuilder
from studio.tools.demo.models import DemoModel

if TYPE_CHECKING:
    import onnx

FRAMES, SAMPLES, BINS, MELS = 64, 256, 129, 40
GAIN = 10.0        # 20 dB: what a recording chain adds before the front-end
FLOOR = 1e-10      # the usual log floor; 0 in FP16 (smallest subnormal 6e-8)
MISH_CLASSES = 10


def build_fp16_frontend() -> onnx.ModelProto:
    """frames [1, 64, 256] -> log_mel [1, 64, 40]: gain, real/imaginary DFT, power, mel, floor, log."""
    g = GraphBuilder(seed=5005)
    x = g.input("frames", [1, FRAMES, SAMPLES])
    n = np.arange(SAMPLES)[:, None]
    k = np.arange(BINS)[None, :]
    window = np.hanning(SAMPLES)[:, None]
    cos = g.constant("dft/cos", (window * np.cos(2 * np.pi * n * k / SAMPLES)).astype(np.float32))
    sin = g.constant("dft/sin", (window * -np.sin(2 * np.pi * n * k / SAMPLES)).astype(np.float32))
    loud = g.mul_scalar(x, GAIN, name="gain/mul")
    re = g._node("MatMul", [loud, cos], "dft/real", None)
    im = g._node("MatMul", [loud, sin], "dft/imag", None)
    power = g._node("Add", [g._node("Mul", [re, re], "power/real_sq", None),
                            g._node("Mul", [im, im], "power/imag_sq", None)], "power/add", None)
    mel = g._node("MatMul", [power, g.constant("mel/filters", _mel_filters())], "mel/matmul", None)
    floor = g.constant("log/floor", np.array(FLOOR, np.float32))
    logged = g._node("Log", [g._node("Add", [mel, floor], "log/add_floor", None)], "log/log", None, "log_mel")
    g._channels[logged] = None
    g.output(logged, [1, FRAMES, MELS])
    return g.make_model("fp16_frontend", "Demo audio front-end: frames -> log-mel power; overflows (loud frames) "
                                         "and underflows (silent frames) in FP16.")


def _mel_filters() -> np.ndarray:
    """Triangular filters over the DFT bins, evenly spaced on the mel scale (HTK's formula)."""
    def mel(hz):
        return 2595 * np.log10(1 + hz / 700)

    def hz(m):
        return 700 * (10 ** (m / 2595) - 1)

    rate = 16000
    edges = hz(np.linspace(mel(0), mel(rate / 2), MELS + 2))
    bins = np.linspace(0, rate / 2, BINS)
    filters = np.zeros((BINS, MELS), np.float32)
    for m in range(MELS):
        left, centre, right = edges[m], edges[m + 1], edges[m + 2]
        rise = (bins - left) / (centre - left)
        fall = (right - bins) / (right - centre)
        filters[:, m] = np.clip(np.minimum(rise, fall), 0, None)
    return filters


def frames_with_silence(seed: int = 0) -> np.ndarray:
    """An input for the front-end: speech-like frames with the last quarter silent (exact zeros)."""
    rng = np.random.default_rng(seed)
    frames = (rng.standard_normal((1, FRAMES, SAMPLES)) * 0.3).astype(np.float32)
    frames[:, FRAMES * 3 // 4:] = 0.0
    return frames


def build_mish_cnn() -> onnx.ModelProto:
    """image [1, 3, 96, 96] -> probabilities [1, 10]; every activation a Softplus -> Tanh -> Mul Mish."""
    g = GraphBuilder(seed=6006)
    x = g.input("image", [1, 3, 96, 96])
    for block, width in enumerate((16, 32, 64), start=1):
        x = g.conv(x, width, stride=2, name=f"block{block}/conv", bias=False)
        x = g.batch_norm(x, name=f"block{block}/bn")
        soft = g._node("Softplus", [x], f"block{block}/mish/softplus", g.channels(x))
        tanh = g.tanh(soft, name=f"block{block}/mish/tanh")
        x = g._node("Mul", [x, tanh], f"block{block}/mish/mul", g.channels(x))
    g.classifier_head(x, MISH_CLASSES)
    return g.make_model("mish_cnn", "Demo classifier with Mish activations written out (Softplus, Tanh, Mul).")


JOURNEY_MODELS: dict[str, DemoModel] = {
    model.name: model
    for model in (
        DemoModel("fp16_frontend", "fp16_frontend.onnx",
                  "Audio front-end (DFT, power, mel, log) that overflows and underflows in FP16: the first "
                  "op that drifts.", build_fp16_frontend, {"frames": (1, FRAMES, SAMPLES)},
                  {"log_mel": (1, FRAMES, MELS)}),
        DemoModel("mish_cnn", "mish_cnn.onnx",
                  "Small classifier with Mish written out as Softplus, Tanh, Mul: the advisor's closed loop.",
                  build_mish_cnn, {"image": (1, 3, 96, 96)}, {"probabilities": (1, MISH_CLASSES)}),
    )
}
# Inputs that show what random data does not: ``inputs/<name>.npy``.
JOURNEY_INPUTS = {"frames_with_silence": frames_with_silence}
