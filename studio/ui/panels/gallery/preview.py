"""The selected picture, large: its overlay (and the compared run's beside it) and every field."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QSizePolicy, QVBoxLayout, QWidget


class Preview(QWidget):
    """Shows one row: pictures on top (one or two), the raw answer below."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.left = self._picture()
        self.right = self._picture()
        self.right.hide()
        self.details = QPlainTextEdit(self)
        self.details.setReadOnly(True)
        self.details.setPlaceholderText("Click a picture to see it large, with the model's answer.")
        self.left_title, self.right_title = QLabel(self), QLabel(self)
        pictures = QHBoxLayout()
        for title, picture in ((self.left_title, self.left), (self.right_title, self.right)):
            column = QVBoxLayout()
            title.setAlignment(Qt.AlignmentFlag.AlignCenter)
            column.addWidget(title)
            column.addWidget(picture, 1)
            pictures.addLayout(column, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(pictures, 3)
        layout.addWidget(self.details, 2)
        self._images: list[tuple[QLabel, QImage]] = []
        self._titles = ("", "")

    def _picture(self) -> QLabel:
        label = QLabel(self)
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        label.setMinimumSize(120, 120)
        label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        return label

    def show_row(self, row: dict | None, other: dict | None = None, titles: tuple[str, str] = ("", "")) -> None:
        """Show ``row``'s answer (and the compared run's row of the same picture); the pictures
        follow through :meth:`show_pictures` once a job has read them."""
        self._images = []
        self._titles = titles
        for label in (self.left, self.right):
            label.setPixmap(QPixmap())
            label.setText("loading…" if row is not None else "")
        self.right.setVisible(other is not None)
        self.right_title.setVisible(other is not None)
        self.left_title.setText(titles[0] if other is not None else "")
        self.right_title.setText(titles[1])
        if row is None:
            self.details.clear()
            return
        lines = [_describe(row, titles[0])]
        if other is not None:
            lines.append(_describe(other, titles[1]))
        self.details.setPlainText("\n\n".join(lines))

    def show_pictures(self, left: tuple[Path | None, QImage], right: tuple[Path | None, QImage] | None) -> None:
        """The pictures read off the GUI thread: (path, image) for each side."""
        self._images = []
        for label, item, title in ((self.left, left, self._titles[0]), (self.right, right, self._titles[1])):
            if item is None:
                continue
            path, image = item
            label.setToolTip(f"{title}\n{path}" if path else "")
            if image.isNull():
                label.setPixmap(QPixmap())
                label.setText("no overlay picture" if path is None else f"cannot read {path.name}")
                continue
            self._images.append((label, image))
            self._fit(label, image)

    def _fit(self, label: QLabel, image: QImage) -> None:
        size = label.size()
        label.setPixmap(QPixmap.fromImage(image).scaled(size, Qt.AspectRatioMode.KeepAspectRatio,
                                                        Qt.TransformationMode.SmoothTransformation))

    def resizeEvent(self, event) -> None:  # Qt override
        super().resizeEvent(event)
        for label, image in self._images:
            self._fit(label, image)


def _describe(row: dict, title: str) -> str:
    head = [f"{title}: {row['image']}" if title else row["image"]]
    for key, value in row.items():
        if key in ("image", "top", "boxes", "overlay"):
            continue
        head.append(f"  {key}: {value}")
    for item in row.get("top", []):
        head.append(f"  class {item['class']} {item['name']}: {item['score']:.4f}")
    for item in row.get("boxes", [])[:50]:
        x1, y1, x2, y2 = item["box"]
        head.append(f"  {item['name']} {item['score']:.3f} at ({x1:.0f}, {y1:.0f}) - ({x2:.0f}, {y2:.0f})")
    if len(row.get("boxes", [])) > 50:
        head.append(f"  … {len(row['boxes']) - 50} more boxes in results.json")
    return "\n".join(head)
