"""Synthetic demo pictures: coloured shapes on smooth noise, sized for the demo models.

They give the pre-processing, inference and comparison tools something recognisable to show
(edges, flat colour regions, texture) without shipping photographs. Every picture is derived
from the seed alone, so the same seed always gives the same pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DemoImage:
    """What one demo picture is for: its key, square side in pixels and intended use."""

    name: str
    size: int
    purpose: str


DEMO_IMAGES: tuple[DemoImage, ...] = (
    DemoImage("segmentation_256", 256, "input for unet.onnx (1x3x256x256)"),
    DemoImage("detection_300", 300, "input for ssd_detector.onnx (1x3x300x300)"),
    DemoImage("classification_224", 224, "input for classifier.onnx (1x3x224x224)"),
    DemoImage("colorization_224", 224, "colour reference for colorization.onnx (L of 224x224)"),
    # Matches the AIPP configs used with ATC, which expect a 640x640 RGB picture.
    DemoImage("aipp_640", 640, "640x640 picture for AIPP pre-processing configs"),
)

# Saturated BGR colours, far from the muted backgrounds so shapes are easy to see and segment.
_PALETTE = (
    (40, 40, 220),  # red
    (40, 200, 40),  # green
    (220, 80, 30),  # blue
    (30, 220, 240),  # yellow
    (200, 40, 200),  # magenta
    (220, 220, 40),  # cyan
    (20, 140, 255),  # orange
    (245, 245, 245),  # white
)


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    """Low-saturation smooth noise with a little fine grain, as uint8 BGR."""
    import cv2

    base = rng.uniform(70, 150)
    tint = rng.normal(0, 10, 3)  # a slight colour cast per image
    # Coarse noise up-sampled with bicubic interpolation gives smooth blotches; a fixed grid
    # keeps the look the same at every picture size ...
    coarse = rng.normal(0, 1, (8, 8, 3)).astype(np.float32)
    smooth = cv2.resize(coarse, (size, size), interpolation=cv2.INTER_CUBIC)
    # ... shared partly across channels so the background stays greyish, not rainbow-coloured.
    smooth = 0.7 * smooth.mean(axis=2, keepdims=True) + 0.3 * smooth
    grain = rng.normal(0, 6, (size, size, 3))
    pixels = base + tint + 35 * smooth + grain
    return np.clip(np.rint(pixels), 0, 255).astype(np.uint8)


def _draw_shapes(rng: np.random.Generator, image: np.ndarray) -> None:
    """Draw 4-7 filled circles, rectangles and triangles, each in a different colour."""
    import cv2

    size = image.shape[0]
    count = int(rng.integers(4, 8))
    colours = rng.permutation(len(_PALETTE))[:count]
    for i, colour_index in enumerate(colours):
        colour = tuple(int(c) for c in _PALETTE[colour_index])
        radius = int(rng.uniform(0.06, 0.16) * size)
        cx, cy = (int(v) for v in rng.integers(radius, size - radius, 2))
        kind = i % 3  # cycle so every picture has each kind of shape at least once
        if kind == 0:
            cv2.circle(image, (cx, cy), radius, colour, thickness=-1, lineType=cv2.LINE_AA)
        elif kind == 1:
            w, h = (int(v) for v in rng.integers(radius // 2, radius + 1, 2))
            cv2.rectangle(image, (cx - w, cy - h), (cx + w, cy + h), colour, thickness=-1)
        else:
            angles = rng.uniform(0, 2 * np.pi) + np.array([0, 2 * np.pi / 3, 4 * np.pi / 3])
            points = np.stack([cx + radius * np.cos(angles), cy + radius * np.sin(angles)], 1)
            cv2.fillPoly(image, [np.rint(points).astype(np.int32)], colour,
                         lineType=cv2.LINE_AA)


def make_demo_images(seed: int = 0) -> dict[str, np.ndarray]:
    """Draw the demo pictures: ``{name: uint8 BGR array of shape (size, size, 3)}``.

    Names and sizes are those of :data:`DEMO_IMAGES`. Each picture has its own generator
    derived from ``(seed, index)``, so adding a picture later does not change the others.
    """
    images = {}
    for index, spec in enumerate(DEMO_IMAGES):
        rng = np.random.default_rng([seed, index])
        image = _background(rng, spec.size)
        _draw_shapes(rng, image)
        images[spec.name] = image
    return images
