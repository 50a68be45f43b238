"""What the gallery shows: the pictures of one infer run (or two, compared), sorted and filtered.

Qt-free: rows are the ``images`` of ``results.json``; sort keys are the metrics the task has;
a second run joins by picture name, and the change of each metric is kept per row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from studio.tools.infer.runner import read_results

# metric -> (label, higher is better)
METRICS = {
    "dice": ("Dice", True), "iou": ("IoU", True), "top1_score": ("top-1 score", True),
    "correct_top1": ("top-1 correct", True), "detections": ("detections", True),
    "foreground_share": ("foreground share", True), "ms": ("inference ms", False),
}


@dataclass
class Run:
    """One infer run: its folder, summary and rows."""

    folder: Path
    summary: dict
    rows: list[dict]
    notes: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> Run:
        """Read the run in ``path`` (the -o folder or its results.json)."""
        path = Path(path)
        folder = path if path.is_dir() else path.parent
        data = read_results(path)
        return cls(folder, data.get("summary", {}), list(data.get("images", [])), list(data.get("notes", [])))

    def picture(self, row: dict) -> Path | None:
        """The overlay picture of ``row``, else the input picture it was made from (None if unknown)."""
        name = row.get("overlay")
        if name:
            return self.folder / name
        source = self.summary.get("pictures")
        if not source:
            return None
        source = Path(source)
        return source if source.is_file() else source / row["image"]


@dataclass
class GalleryState:
    """The run shown, the one compared with (optional), the sort and the filter."""

    run: Run | None = None
    other: Run | None = None
    sort_key: str = "image"
    worst_first: bool = True
    limit: int = 0               # 0: all pictures
    failed_only: bool = False
    _other_index: tuple | None = field(default=None, repr=False, compare=False)  # (run, {picture: row})

    def metrics(self) -> list[str]:
        """The metrics the shown run has, in METRICS order."""
        if self.run is None:
            return []
        have = {k for row in self.run.rows for k in row}
        return [k for k in METRICS if k in have]

    def value(self, row: dict, key: str) -> float | None:
        """The number of ``key`` for a row; ``delta:KEY`` is the change against the compared run."""
        if key.startswith("delta:"):
            other = self.other_row(row)
            base = key[6:]
            if other is None or row.get(base) is None or other.get(base) is None:
                return None
            return float(other[base]) - float(row[base])
        value = row.get(key)
        return float(value) if isinstance(value, (int, float)) else None

    def other_row(self, row: dict) -> dict | None:
        """The compared run's row of the same picture."""
        if self.other is None:
            return None
        index = self._other_index
        if index is None or index[0] is not self.other:
            index = (self.other, {r["image"]: r for r in self.other.rows})
            self._other_index = index
        return index[1].get(row["image"])

    def visible(self) -> list[dict]:
        """The rows to show, in order: sorted by the key (worst first for metrics), then limited."""
        if self.run is None:
            return []
        rows = [r for r in self.run.rows if not self.failed_only or "error" in r]
        if self.sort_key == "image":
            rows = sorted(rows, key=lambda r: r["image"])
        else:
            base = self.sort_key[6:] if self.sort_key.startswith("delta:") else self.sort_key
            higher_is_better = METRICS.get(base, ("", True))[1]
            ascending = self.worst_first == higher_is_better

            def key(row: dict) -> tuple:
                value = self.value(row, self.sort_key)
                if value is None or math.isnan(value):
                    return (1, 0.0, row["image"])  # rows without the number go last
                return (0, value if ascending else -value, row["image"])

            rows = sorted(rows, key=key)
        return rows[:self.limit] if self.limit else rows

    def caption(self, row: dict) -> str:
        """Two short lines under a thumbnail: the name and the sort metric (and its change)."""
        name = row["image"]
        if "error" in row:
            return f"{name}\nfailed"
        key = self.sort_key if self.sort_key != "image" else (self.metrics() or ["ms"])[0]
        base = key[6:] if key.startswith("delta:") else key
        value = self.value(row, base)
        text = f"{METRICS.get(base, (base,))[0]} {value:.3f}" if value is not None else ""
        delta = self.value(row, f"delta:{base}") if self.other is not None else None
        if delta is not None:
            text += f" ({delta:+.3f})"
        return f"{name}\n{text}"

    def summary_text(self) -> str:
        """The run's summary in one line (and the compared run's)."""
        if self.run is None:
            return "No results: run a model over pictures (Run…) or open a studio infer folder."
        text = _summary_line(self.run)
        if self.other is not None:
            text += "   vs   " + _summary_line(self.other)
        return text


def _summary_line(run: Run) -> str:
    s = run.summary
    parts = [f"{run.folder.name}: {s.get('images', len(run.rows)):,} pictures"]
    # The task says what the numbers mean; a guessed one says so (give --task / Task to choose).
    task = next((n[len("task: "):] for n in run.notes if n.startswith("task: ")), s.get("task"))
    if task:
        parts.append(f"task {task}")
    if s.get("failed"):
        parts.append(f"{s['failed']} failed")
    for key, label in (("top1_accuracy", "top-1"), ("top5_accuracy", "top-5"), ("dice_mean", "Dice"),
                       ("iou_mean", "IoU"), ("map50", "mAP@0.5")):
        if key in s:
            parts.append(f"{label} {s[key]:.4f}")
    if s.get("inference_ms_mean") is not None:
        parts.append(f"{s['inference_ms_mean']:.2f} ms/picture")
    return ", ".join(parts)
