"""Which task a model's first output answers, read from its shape, and the refusal of a task that
does not fit it.

* ``[N, C, H, W]`` with a picture-sized H x W (8 or more each): a per-pixel map -> *segment*;
* ``[N, C]`` or ``[C]``: scores per class -> *classify*;
* ``[N, boxes, values]`` (5 or more values a box, YOLO's and SSD's layouts), or several outputs
  (boxes, scores, ...): -> *detect*.

A *classify* of a spatial map would rank its pixels as "classes" (a U-Net's [1, 2, 256, 256] as
131,072 of them) and answer nonsense without complaint: :func:`check_task` refuses it.
"""

from __future__ import annotations

from studio.core.errors import UserError

MIN_SIDE = 8  # a map side smaller than this is no picture (a 1 x 1 or 7 x 7 head feeds a classifier)


def _dims(shape) -> list[int | None]:
    return [d if isinstance(d, int) and d > 0 else None for d in (shape or [])]


def is_spatial(shape) -> bool:
    """Whether ``shape`` is a per-pixel map: 3 or 4 dims whose last two are picture-sized (unknown
    dims count as such: a dynamic H x W follows the picture)."""
    dims = _dims(shape)
    if len(dims) not in (3, 4):
        return False
    return all(d is None or d >= MIN_SIDE for d in dims[-2:]) and not (len(dims) == 3 and _box_layout(dims))


def _box_layout(dims: list[int | None]) -> bool:
    # [N, boxes, values] with 5..100 values (x, y, w, h, score, classes...) or [N, values, boxes] (YOLOv8)
    return len(dims) == 3 and any(d is not None and 5 <= d <= 100 for d in dims[1:])


def guess_task(shapes: list) -> tuple[str | None, str]:
    """(task, why) from the model's output shapes (first output first); task None when no rule fits."""
    if not shapes:
        return None, "the model declares no output"
    first = _dims(shapes[0])
    text = "[" + ", ".join("?" if d is None else str(d) for d in first) + "]"
    if len(first) == 4 and is_spatial(first):
        return "segment", f"output {text} is a per-pixel map"
    if len(first) in (1, 2):
        return "classify", f"output {text} is one score per class"
    if len(first) == 3 and _box_layout(first) or len(shapes) > 1:
        return "detect", f"output {text} holds boxes" if len(shapes) == 1 else f"{len(shapes)} outputs, first {text}"
    return None, f"output {text} fits no task"


def check_task(task: str, shape, model_name: str, output_name: str) -> None:
    """Refuse a *classify* whose output is a spatial map (its "classes" would be pixels)."""
    if task != "classify" or not is_spatial(shape):
        return
    dims = _dims(shape)
    classes = 1
    for d in dims[1:]:
        classes *= d or 1
    text = "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
    raise UserError(f"Classify reads one score per class, but {model_name}'s output {output_name!r} is a per-pixel "
                    f"map {text}: its {classes:,} values would be ranked as classes",
                    f"{model_name}, output {output_name} {text}",
                    "Run it as --task segment (the gallery's Task: segment), or leave the task out and Studio "
                    "takes it from the output's shape.")
