"""Thumbnails made off the GUI thread, for the pictures in view only, kept in a bounded cache.

A folder of 10,000 pictures would need about half a gigabyte of thumbnails; the gallery asks
for the rows on screen (and a page around them), a job reads and shrinks them with OpenCV and
hands back QImages, and the cache forgets the least recently used.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Generator
from pathlib import Path

from PySide6.QtGui import QImage, QPixmap

from studio.core.jobs import CancelToken, Progress

SIZE = 144
CACHE = 1500
BATCH = 24


def thumbnail_image(path: Path, size: int = SIZE) -> QImage:
    """A QImage of at most ``size`` pixels a side (a grey square when the file cannot be read)."""
    import cv2
    import numpy as np

    picture = cv2.imread(str(path), cv2.IMREAD_COLOR) if path.is_file() else None
    if picture is None:
        image = QImage(size, size, QImage.Format.Format_RGB888)
        image.fill(0x808080)
        return image
    h, w = picture.shape[:2]
    scale = size / max(h, w)
    small = cv2.resize(picture, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    rgb = np.ascontiguousarray(small[:, :, ::-1])
    image = QImage(rgb.data, rgb.shape[1], rgb.shape[0], rgb.strides[0], QImage.Format.Format_RGB888)
    return image.copy()  # own the pixels: the numpy buffer goes away


def thumbnails_job(wanted: list[tuple[str, Path]], cancel: CancelToken | None = None
                   ) -> Generator[Progress, None, dict]:
    """Job: ``{key: QImage}`` for ``wanted`` (key, path) — the pictures on screen, a hundred or so."""
    images: dict = {}
    for count, (key, path) in enumerate(wanted, start=1):
        if cancel is not None:
            cancel.raise_if_cancelled()
        images[key] = thumbnail_image(path)
        if count % BATCH == 0:
            yield Progress(count / len(wanted), f"thumbnails {count:,} of {len(wanted):,}")
    return images


class ThumbCache:
    """Pixmaps by key, least recently used forgotten beyond ``limit``."""

    def __init__(self, limit: int = CACHE):
        self.limit = limit
        self._items: OrderedDict[str, QPixmap] = OrderedDict()

    def get(self, key: str) -> QPixmap | None:
        """The pixmap of ``key``, marked as just used."""
        pixmap = self._items.get(key)
        if pixmap is not None:
            self._items.move_to_end(key)
        return pixmap

    def put_images(self, images: dict) -> None:
        """Add QImages (made into pixmaps here, on the GUI thread)."""
        for key, image in images.items():
            self._items[key] = QPixmap.fromImage(image)
            self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def clear(self) -> None:
        """Forget every thumbnail (a new run is shown)."""
        self._items.clear()
