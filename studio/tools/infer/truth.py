"""Ground truth for a folder of pictures: class labels, boxes (VOC XML or COCO JSON) or masks.

* labels: a CSV of ``image,label`` rows (a header row is allowed; the label is a class index or a
  name from the labels file), matched to pictures by file name or stem;
* boxes: a folder of Pascal VOC XML files (one per picture, by stem) or one COCO JSON file;
* masks: a folder of PNGs (one per picture, by stem), class index per pixel (any non-zero value
  is foreground for two-class models).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import numpy as np

from studio.core.errors import UserError
from studio.core.safe_read import load_json, read_text


@dataclass
class TruthBoxes:
    """Boxes of one picture: (x1, y1, x2, y2) pixels and class names."""

    boxes: np.ndarray
    names: list[str]


def read_labels(path: Path, class_names: list[str]) -> dict[str, int]:
    """``{image stem: class index}`` from a labels CSV."""
    try:
        rows = list(csv.reader(read_text(path, "labels file", encoding="utf-8-sig").splitlines()))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"Cannot read the labels file ({exc})", path, "Give a CSV of image,label rows.") from exc
    index = {name: i for i, name in enumerate(class_names)}
    out: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if not row or not row[0].strip():
            continue
        if len(row) < 2:
            raise UserError("A labels row needs two columns: image,label", f"{path}, line {number}",
                            "Write one image,label pair per line.")
        image, label = row[0].strip(), row[1].strip()
        if label.lstrip("-").isdigit():
            out[Path(image).stem] = int(label)
        elif label in index:
            out[Path(image).stem] = index[label]
        elif number == 1:
            continue  # a header row
        else:
            raise UserError(f"Label {label!r} is neither a class index nor a name in the class list",
                            f"{path}, line {number}", "Give --labels with the model's class names, or use indices.")
    return out


def read_boxes(path: Path) -> dict[str, TruthBoxes]:
    """``{image stem: boxes}`` from a folder of VOC XML files or a COCO JSON file."""
    if path.is_dir():
        return {xml.stem: _voc(xml) for xml in sorted(path.glob("*.xml"))}
    try:
        data = load_json(path, "COCO annotations")
        names = {c["id"]: c["name"] for c in data["categories"]}
        images = {i["id"]: Path(i["file_name"]).stem for i in data["images"]}
        out = {stem: TruthBoxes(np.zeros((0, 4)), []) for stem in images.values()}
        grouped: dict[str, list] = {}
        for a in data["annotations"]:
            x, y, w, h = (float(v) for v in a["bbox"])
            grouped.setdefault(images[a["image_id"]], []).append(((x, y, x + w, y + h), names[a["category_id"]]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"Not a readable COCO annotation file ({exc!r})", path,
                        "Give a COCO JSON (images, annotations with bbox, categories) or a folder of VOC XML files.") \
            from exc
    for stem, items in grouped.items():
        out[stem] = TruthBoxes(np.array([b for b, _ in items], np.float64).reshape(-1, 4), [n for _, n in items])
    return out


def _voc(path: Path) -> TruthBoxes:
    try:
        root = ElementTree.parse(path).getroot()
        boxes, names = [], []
        for obj in root.iter("object"):
            box = obj.find("bndbox")
            boxes.append([float(box.find(k).text) for k in ("xmin", "ymin", "xmax", "ymax")])
            names.append(obj.find("name").text.strip())
    except (ElementTree.ParseError, AttributeError, TypeError, ValueError, OSError) as exc:
        raise UserError(f"Not a readable Pascal VOC annotation ({exc})", path,
                        "Each object needs a name and a bndbox with xmin, ymin, xmax, ymax.") from exc
    return TruthBoxes(np.array(boxes, np.float64).reshape(-1, 4), names)


def read_mask(folder: Path, stem: str) -> np.ndarray | None:
    """The mask PNG of a picture (class per pixel), or None when there is none."""
    import cv2

    for suffix in (".png", ".PNG", ".bmp", ".jpg"):
        path = folder / f"{stem}{suffix}"
        if path.is_file():
            mask = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
            if mask is None:
                raise UserError("Cannot read the mask image", path, "Give a PNG with one class index per pixel.")
            return mask if mask.ndim == 2 else mask[:, :, 0]
    return None
