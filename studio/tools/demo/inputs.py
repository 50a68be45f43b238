"""Input arrays for the demo models, made from the demo pictures: ``inputs/<model>_<input>.npy``.

They are what ``--input NAME=FILE.npy`` (profile run, dump, also on a host, bench, convert) takes: the model's input tensor, float32 NCHW, pre-processed as the model expects (see
:mod:`studio.tools.demo.models`): ``pixel / 127.5 - 1`` in RGB order for the image models, the
Lab lightness as ``L / 50 - 1`` for the colorization model. Runs on them see a real picture
instead of seeded noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DemoInput:
    """One demo input array: the model and input it feeds, and the picture it is made from."""

    model: str
    input: str
    picture: str

    @property
    def file_name(self) -> str:
        """``unet_image.npy``."""
        return f"{self.model}_{self.input}.npy"


DEMO_INPUTS: tuple[DemoInput, ...] = (
    DemoInput("unet", "image", "segmentation_256"),
    DemoInput("ssd_detector", "image", "detection_300"),
    DemoInput("colorization", "L", "colorization_224"),
    DemoInput("classifier", "image", "classification_224"),
)


def make_demo_inputs(images: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{file name: float32 array}`` for every demo model, from the uint8 BGR demo pictures."""
    import cv2

    arrays = {}
    for spec in DEMO_INPUTS:
        bgr = images[spec.picture]
        if spec.input == "L":
            lightness = cv2.cvtColor(bgr, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32) * (100 / 255)
            array = (lightness / 50 - 1)[None, None]
        else:
            array = (bgr[..., ::-1].astype(np.float32) / 127.5 - 1).transpose(2, 0, 1)[None]
        arrays[spec.file_name] = np.ascontiguousarray(array, dtype=np.float32)
    return arrays
