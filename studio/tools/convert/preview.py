"""The AIPP preview: a picture as the NPU receives it, and the same picture after pre-processing.

Runs as a job (image decoding and the arithmetic stay off the GUI thread). The "after" image
shows the channels the model sees, in order, as R, G, B — so a red/blue swap is visible — scaled
from their value range to 0..255 for display; ``stats`` gives the real range and means.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.tools.convert.aipp import AippOp


@dataclass
class AippPreview:
    """Display-ready RGB uint8 images (H, W, 3) and a line of numbers about the result."""

    before: np.ndarray
    after: np.ndarray
    stats: str


def sample_image(height: int = 480, width: int = 640) -> np.ndarray:
    """A synthetic RGB picture (gradients and discs) for when no image is chosen."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.stack([xx / width * 255, yy / height * 255, (1 - xx / width) * 200 + 30], axis=-1)
    for cy, cx, r, colour in ((0.35, 0.3, 0.18, (230, 40, 40)), (0.6, 0.65, 0.22, (40, 200, 60)),
                              (0.3, 0.75, 0.12, (250, 230, 40))):
        mask = (yy - cy * height) ** 2 + (xx - cx * width) ** 2 < (r * min(height, width)) ** 2
        image[mask] = colour
    return image.astype(np.uint8)


def raw_from_rgb(rgb: np.ndarray, op: AippOp) -> np.ndarray:
    """Lay out an RGB picture (H, W, 3 uint8) as the raw input of ``op``'s format, batch 1."""
    import cv2

    fmt = op.input_format
    if fmt == "XRGB8888_U8":
        x = np.full(rgb.shape[:2] + (1,), 255, np.uint8)
        raw = np.concatenate([rgb, x] if op.ax_swap_switch else [x, rgb], axis=-1)
    elif fmt == "YUV400_U8":
        raw = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)[..., None]
    elif fmt == "YUV420SP_U8":
        h, w = rgb.shape[:2]
        rgb = rgb[: h - h % 2, : w - w % 2]
        ycrcb = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2YCrCb)  # full range, as the JPEG matrix expects
        cb = cv2.resize(ycrcb[..., 2], (rgb.shape[1] // 2, rgb.shape[0] // 2), interpolation=cv2.INTER_AREA)
        cr = cv2.resize(ycrcb[..., 1], (rgb.shape[1] // 2, rgb.shape[0] // 2), interpolation=cv2.INTER_AREA)
        uv = np.stack([cr, cb] if op.rbuv_swap_switch else [cb, cr], axis=-1).reshape(cb.shape[0], -1)
        raw = np.concatenate([ycrcb[..., 0], uv])[..., None]
    else:
        raw = rgb
    return raw[None]


def _display(raw: np.ndarray, op: AippOp) -> np.ndarray:
    """The raw input as a viewer shows it: YUV420SP decoded with the JPEG matrix, grey expanded."""
    if op.input_format == "YUV420SP_U8":
        plain = AippOp(input_format="YUV420SP_U8", csc_switch=True)
        return np.clip(plain.apply(raw)[0], 0, 255).astype(np.uint8)
    x = raw[0]
    if op.input_format == "XRGB8888_U8":
        x = x[..., :3] if op.ax_swap_switch else x[..., 1:4]
    if x.shape[-1] == 1:
        x = np.repeat(x, 3, axis=-1)
    return np.ascontiguousarray(x)


def preview_aipp(op: AippOp, image: Path | None = None, model_hw: tuple[int, int] | None = None,
                 cancel: CancelToken | None = None) -> Generator[Progress, None, AippPreview]:
    """Load ``image`` (or the sample), size it to the source size, run ``op`` on it."""
    import cv2

    yield Progress(None, "loading the preview image")
    if image is not None:
        bgr = cv2.imread(str(image), cv2.IMREAD_COLOR)
        if bgr is None:
            raise UserError("Cannot read the preview image", image, "Choose a PNG or JPEG file.")
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    else:
        rgb = sample_image()
    h, w = op.src_size(model_hw)
    if not h or not w:
        h, w = rgb.shape[:2]
    if (h, w) != rgb.shape[:2]:
        rgb = cv2.resize(rgb, (w, h), interpolation=cv2.INTER_AREA)
    if cancel is not None:
        cancel.raise_if_cancelled()
    yield Progress(0.5, "pre-processing")
    raw = raw_from_rgb(rgb, op)
    after = op.apply(raw)[0]
    lo, hi = float(after.min()), float(after.max())
    scaled = (after - lo) / (hi - lo) * 255 if hi > lo else np.zeros_like(after)
    if scaled.shape[-1] == 1:
        scaled = np.repeat(scaled, 3, axis=-1)
    means = ", ".join(f"{m:.3g}" for m in after.reshape(-1, after.shape[-1]).mean(axis=0))
    buffer = f" (NV12 buffer {raw.shape[2]}x{raw.shape[1]})" if op.input_format == "YUV420SP_U8" else ""
    stats = (f"raw {op.input_format or '?'} {w}x{h}{buffer}  ->  model input "
             f"{after.shape[1]}x{after.shape[0]}x{after.shape[2]}, range [{lo:.3g}, {hi:.3g}], mean per channel [{means}]")
    return AippPreview(_display(raw, op), np.ascontiguousarray(scaled.astype(np.uint8)), stats)
