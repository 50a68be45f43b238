"""The communication heat map's content, computed off the GUI thread (Qt-free, numpy).

A 256-rank job has ~65,000 links per step: adding them up per (src, dst) and colouring one pixel
per cell took ~0.6 s in Python on the GUI thread. Here the rows are grouped with numpy and the
pixels coloured as one array, on a worker; the widget only wraps the pixels in an image.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from studio.ui.panels.cluster.state import Cell

LOW_RGB, HIGH_RGB = (222, 235, 247), (8, 48, 107)


@dataclass
class HeatData:
    """The map of one (step, group) choice: axes, cells, colour scale and ARGB pixels (row = src)."""

    ranks: list[int] = field(default_factory=list)
    cells: dict[tuple[int, int], Cell] = field(default_factory=dict)
    peak: float = 0.0
    low: float = 0.0
    log_scale: bool = False
    pixels: np.ndarray | None = None  # (n, n) uint32 0xAARRGGBB; 0 (transparent) where no traffic

    def fraction(self, value: float) -> float:
        """Where ``value`` sits on the colour scale, 0 (palest) to 1 (darkest)."""
        return float(fractions(np.asarray([value], dtype=float), self.peak, self.low, self.log_scale)[0])


def fractions(values: np.ndarray, peak: float, low: float, log_scale: bool) -> np.ndarray:
    """:meth:`HeatData.fraction` of every value (0 for no traffic)."""
    out = np.zeros(len(values), dtype=float)
    if peak <= 0:
        return out
    positive = values > 0
    if log_scale:
        out[positive] = np.log(values[positive] / low) / np.log(peak / low)
    else:
        out[positive] = values[positive] / peak
    return np.clip(out, 0.0, 1.0)


def argb(fraction: np.ndarray) -> np.ndarray:
    """Opaque 0xAARRGGBB colours between the palest and the darkest blue (as ``heatmap.colour``)."""
    channels = [np.rint(a + (b - a) * fraction).astype(np.uint32) for a, b in zip(LOW_RGB, HIGH_RGB)]
    return np.uint32(0xFF000000) | (channels[0] << 16) | (channels[1] << 8) | channels[2]


def heat_data(ranks: list[int], rows: list[dict]) -> HeatData:
    """The cells of ``rows`` (the selected matrix rows) on the axes ``ranks``.

    A cell of one row keeps that row's bandwidth; several rows (groups, steps) are added up and
    their bandwidth is the summed size over the summed time.
    """
    data = HeatData(list(ranks))
    if not rows or not ranks:
        return data
    index = {rank: i for i, rank in enumerate(ranks)}
    n = len(ranks)
    src = np.fromiter((index[m["src"]] for m in rows), dtype=np.int64, count=len(rows))
    dst = np.fromiter((index[m["dst"]] for m in rows), dtype=np.int64, count=len(rows))
    size = np.fromiter((m["size_mb"] for m in rows), dtype=float, count=len(rows))
    time = np.fromiter((m["time_ms"] for m in rows), dtype=float, count=len(rows))
    bandwidth = np.fromiter((m["bandwidth_gbps"] for m in rows), dtype=float, count=len(rows))
    keys, inverse, counts = np.unique(src * n + dst, return_inverse=True, return_counts=True)
    sizes = np.bincount(inverse, weights=size, minlength=len(keys))
    times = np.bincount(inverse, weights=time, minlength=len(keys))
    first = np.full(len(keys), len(rows), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(rows)))
    with np.errstate(divide="ignore", invalid="ignore"):
        summed = np.where(times > 0, sizes / np.where(times > 0, times, 1.0), 0.0)
    bandwidths = np.where(counts == 1, bandwidth[first], summed)
    transports: list[set] = [set() for _ in keys]
    groups: list[set] = [set() for _ in keys]
    for k, m in zip(inverse.tolist(), rows):
        transports[k].add(m["transport"])
        groups[k].add(str(m["group"]))
    rank_of = np.asarray(ranks)
    data.cells = {(int(rank_of[key // n]), int(rank_of[key % n])):
                  Cell(int(rank_of[key // n]), int(rank_of[key % n]), float(s), float(t), float(b),
                       sorted(x for x in tr if x), sorted(g))
                  for key, s, t, b, tr, g in zip(keys.tolist(), sizes, times, bandwidths, transports, groups)}
    positive = bandwidths[bandwidths > 0]
    data.peak = float(positive.max()) if len(positive) else 0.0
    data.low = float(positive.min()) if len(positive) else 0.0
    data.log_scale = data.low > 0 and data.peak / data.low > 10
    pixels = np.zeros(n * n, dtype=np.uint32)
    pixels[keys] = argb(fractions(bandwidths, data.peak, data.low, data.log_scale))
    data.pixels = pixels.reshape(n, n)
    return data
