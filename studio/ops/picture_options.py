"""The options that say how pictures are fed to a model, declared once for every command that
feeds pictures (``studio infer`` and ``studio quantize``'s calibration folder): each function gives
a Request's dataclass field with its option (:mod:`studio.core.options`), so the flags, words and
help read the same in both commands.
"""

from __future__ import annotations

from studio.core.options import option
from studio.ops.picture_size import picture_size
from studio.tools.infer.preprocess import PRESETS, RESIZE_MODES
from studio.tools.infer.words import parse_triple, size_word, triple_word


def preset_field(help: str = "normalisation: unit (0..1), symmetric (-1..1), imagenet, raw (0..255); "
                             "default per task"):
    return option("--preset", default=None, choices=sorted(PRESETS), help=help)


def resize_field(help: str = "default: center-crop (classify), letterbox (detect), stretch (segment)"):
    return option("--resize", default=None, choices=RESIZE_MODES, help=help)


def size_field():
    """``--input-shape NAME=DIMS`` (the spelling every command sizes a model input with), read as the
    picture's (height, width); the older ``--size HxW`` is still read, hidden from ``--help``."""
    return option("--input-shape", "--input_shape", old=("--size",), default=None, metavar="NAME=DIMS",
                  format=size_word, parse=lambda text, read: picture_size(text, read.get("model")),
                  help="size of the picture input, for models with dynamic dims: NAME=1,3,H,W (channels "
                       "first) or NAME=1,H,W,3 (channels last), as the other commands take it; the old "
                       "--size HxW still works")


def bgr_field():
    return option("--bgr", default=False, action="store_true", help="feed BGR (OpenCV order) instead of RGB")


def layout_field():
    return option("--layout", default=None, choices=("NCHW", "NHWC"), help="default: from the model's input shape")


def mean_field():
    return option("--mean", default=None, type=parse_triple, metavar="R,G,B", format=triple_word,
                  help="per-channel mean on 0..255 pixels")


def std_field():
    return option("--std", default=None, type=parse_triple, metavar="R,G,B", format=triple_word,
                  help="per-channel std on 0..255 pixels")
