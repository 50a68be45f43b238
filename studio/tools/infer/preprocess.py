"""Turn a picture into a model input: resize, colour order, normalisation and layout.

The options mirror what an AIPP configuration does on the NPU (crop / resize, RGB or BGR,
``(pixel - mean) * scale``, NCHW or NHWC), so a run here and a run of the converted model on the
host see the same numbers. Presets cover the usual trainings; every value can be given instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studio.core.errors import UserError

# name -> (mean per channel, std per channel) on 0..255 pixels, in RGB order
PRESETS = {
    "unit": ((0.0, 0.0, 0.0), (255.0, 255.0, 255.0)),                   # 0..1
    "symmetric": ((127.5, 127.5, 127.5), (127.5, 127.5, 127.5)),         # -1..1
    "imagenet": ((123.675, 116.28, 103.53), (58.395, 57.12, 57.375)),    # torchvision's
    "raw": ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)),                          # 0..255
}
RESIZE_MODES = ("stretch", "letterbox", "center-crop")
# What each task uses when the user gives no preset or resize mode (the summary says so).
TASK_DEFAULTS = {"classify": ("imagenet", "center-crop"), "detect": ("unit", "letterbox"),
                 "segment": ("unit", "stretch")}


@dataclass(frozen=True)
class Preprocess:
    """How pictures become inputs: size (height, width), resize mode, mean/std, colour order, layout."""

    height: int
    width: int
    channels: int = 3
    resize: str = "stretch"
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (255.0, 255.0, 255.0)
    bgr: bool = False
    layout: str = "NCHW"
    preset: str = "unit"
    defaults_used: tuple[str, ...] = ()  # which values were not given (shown with the results)

    def describe(self) -> str:
        """One line for the CLI and the report."""
        text = (f"{self.height}x{self.width} {self.resize}, {'BGR' if self.bgr else 'RGB'}, {self.layout}, "
                f"preset {self.preset} (mean {_fmt(self.mean)}, std {_fmt(self.std)})")
        if self.defaults_used:
            text += f"; not given, so the task's default: {', '.join(self.defaults_used)}"
        return text


def _fmt(values) -> str:
    return "/".join(f"{v:g}" for v in values)


@dataclass(frozen=True)
class Placement:
    """Where the model's input pixels came from in the original picture (to map boxes and masks back)."""

    scale_y: float
    scale_x: float
    offset_y: float
    offset_x: float
    image_height: int
    image_width: int

    def to_image(self, boxes: np.ndarray) -> np.ndarray:
        """Boxes (x1, y1, x2, y2) in input pixels -> picture pixels, clipped to the picture."""
        out = boxes.astype(np.float64).copy()
        out[:, [0, 2]] = (out[:, [0, 2]] - self.offset_x) / self.scale_x
        out[:, [1, 3]] = (out[:, [1, 3]] - self.offset_y) / self.scale_y
        out[:, [0, 2]] = out[:, [0, 2]].clip(0, self.image_width)
        out[:, [1, 3]] = out[:, [1, 3]].clip(0, self.image_height)
        return out


def layout_of(shape: tuple) -> str | None:
    """NCHW or NHWC from a 4-D image input shape (channels 1, 3 or 4), or None."""
    if len(shape) != 4:
        return None
    if shape[1] in (1, 3, 4):
        return "NCHW"
    if shape[3] in (1, 3, 4):
        return "NHWC"
    return None


def preset_for_input(dtype: str, preset: str | None, mean) -> str | None:
    """The preset for a model input of numpy type ``dtype``: a uint8 input (a model with AIPP,
    which normalises on the NPU, or its ONNX twin) takes the pixels as they are, ``raw``, unless
    the user gave a preset or a mean; otherwise ``preset`` as given."""
    if dtype == "uint8" and preset is None and mean is None:
        return "raw"
    return preset


def make_preprocess(input_shape: tuple, task: str, preset: str | None = None, resize: str | None = None,
                    size: tuple[int, int] | None = None, bgr: bool = False, layout: str | None = None,
                    mean: tuple | None = None, std: tuple | None = None, input_name: str = "input") -> Preprocess:
    """The preprocessing for a model input of ``input_shape`` (dims may be None or strings when dynamic)."""
    defaults = []
    default_preset, default_resize = TASK_DEFAULTS[task]
    if preset is None and mean is None:
        preset, _ = default_preset, defaults.append(f"--preset {default_preset}")
    if resize is None:
        resize, _ = default_resize, defaults.append(f"--resize {default_resize}")
    if preset is not None and preset not in PRESETS:
        raise UserError(f"Unknown preset {preset!r}", None, f"Use one of: {', '.join(PRESETS)}.")
    if resize not in RESIZE_MODES:
        raise UserError(f"Unknown resize mode {resize!r}", None, f"Use one of: {', '.join(RESIZE_MODES)}.")
    preset_mean, preset_std = PRESETS[preset or "raw"]
    layout = layout or layout_of(tuple(input_shape))
    if layout not in ("NCHW", "NHWC"):
        raise UserError(f"Input {input_name!r} of shape {list(input_shape)} is not an image input (N, C, H, W) or "
                        "(N, H, W, C) with 1, 3 or 4 channels", None, "Give --layout NCHW|NHWC for another layout.")
    dims = list(input_shape)
    h_dim, w_dim, c_dim = (dims[2], dims[3], dims[1]) if layout == "NCHW" else (dims[1], dims[2], dims[3])
    if size is None:
        if not all(isinstance(d, int) and d > 0 for d in (h_dim, w_dim)):
            raise UserError(f"Input {input_name!r} has dynamic height or width ({list(input_shape)})", None,
                            "Give the size to feed, e.g. --size 640x640.")
        size = (h_dim, w_dim)
    channels = c_dim if isinstance(c_dim, int) and c_dim > 0 else 3
    return Preprocess(size[0], size[1], channels, resize, tuple(mean or preset_mean), tuple(std or preset_std),
                      bgr, layout, preset or "custom", tuple(defaults))


def apply(pre: Preprocess, image_bgr: np.ndarray) -> tuple[np.ndarray, Placement]:
    """The model input (1 image, float32) for a uint8 BGR picture, and where its pixels came from."""
    import cv2

    ih, iw = image_bgr.shape[:2]
    h, w = pre.height, pre.width
    if pre.resize == "stretch":
        resized = cv2.resize(image_bgr, (w, h), interpolation=cv2.INTER_LINEAR)
        placement = Placement(h / ih, w / iw, 0.0, 0.0, ih, iw)
    elif pre.resize == "letterbox":
        scale = min(h / ih, w / iw)
        nh, nw = max(1, round(ih * scale)), max(1, round(iw * scale))
        top, left = (h - nh) // 2, (w - nw) // 2
        resized = np.full((h, w, 3), 114, np.uint8)
        resized[top:top + nh, left:left + nw] = cv2.resize(image_bgr, (nw, nh), interpolation=cv2.INTER_LINEAR)
        placement = Placement(nh / ih, nw / iw, float(top), float(left), ih, iw)
    else:  # center-crop: the shorter side to size / 0.875, then the centre (the ImageNet evaluation)
        scale = max(h, w) / 0.875 / min(ih, iw)
        nh, nw = max(h, round(ih * scale)), max(w, round(iw * scale))
        big = cv2.resize(image_bgr, (nw, nh), interpolation=cv2.INTER_LINEAR)
        top, left = (nh - h) // 2, (nw - w) // 2
        resized = big[top:top + h, left:left + w]
        placement = Placement(nh / ih, nw / iw, -float(top), -float(left), ih, iw)
    if pre.channels == 1:
        pixels = cv2.cvtColor(resized, cv2.COLOR_BGR2GRAY)[:, :, None].astype(np.float32)
        pixels = (pixels - pre.mean[0]) / pre.std[0]
    else:
        pixels = resized if pre.bgr else resized[:, :, ::-1]
        order = (2, 1, 0) if pre.bgr else (0, 1, 2)  # mean/std are given in RGB order
        mean = np.array([pre.mean[i] for i in order], np.float32)
        std = np.array([pre.std[i] for i in order], np.float32)
        pixels = (pixels.astype(np.float32) - mean) / std
    tensor = pixels.transpose(2, 0, 1) if pre.layout == "NCHW" else pixels
    return np.ascontiguousarray(tensor[None], dtype=np.float32), placement
