"""Text that gives way keeps whole words and numbers, and the full text is one hover away."""

from __future__ import annotations

import re

from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel

from studio.tools.graph.overlay import unit_in_title
from studio.ui.numfmt import number, si
from studio.ui.widgets.elided_label import ElidedLabel, fit_text


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d[\d,.]*", text)


def test_fit_text_drops_whole_parts_and_never_cuts_a_number(qtbot):
    metrics = QFontMetrics(QLabel().font())
    info = "7,018 slices · 2 tracks · 2 counters · 461.3 ms"
    for width in range(10, metrics.horizontalAdvance(info) + 5, 7):
        shown = fit_text(info, metrics, width)
        assert metrics.horizontalAdvance(shown) <= width or shown == "…"
        assert set(_numbers(shown)) <= set(_numbers(info)), shown  # no "7,0" out of "7,018"
    crumb = "main › If_0 › then_branch › decoder/If › known_op"
    short = fit_text(crumb, metrics, metrics.horizontalAdvance("… › decoder/If › known_op") + 2, " › ",
                     keep_end=True)
    assert short == "… › decoder/If › known_op"  # the deepest levels, whole words
    shape = fit_text("float32[1,3,256,256]", metrics, metrics.horizontalAdvance("float32[1,3,256,…") + 1)
    assert shape == "float32[1,3,256,…"


def test_elided_label_keeps_its_text_and_puts_it_in_the_tooltip(qtbot):
    label = ElidedLabel("393 slices · 3 tracks · 2 counters · 461.3 ms")
    qtbot.addWidget(label)
    label.setToolTip("source: /tmp/unet_cpu")
    label.resize(label.fontMetrics().horizontalAdvance("393 slices · …") + 4, 20)
    label.show()
    assert label.text() == "393 slices · 3 tracks · 2 counters · 461.3 ms"
    assert label.shown_text() == "393 slices · …"
    assert label.toolTip() == "393 slices · 3 tracks · 2 counters · 461.3 ms\nsource: /tmp/unet_cpu"
    label.resize(600, 20)
    assert label.shown_text() == label.text() and label.toolTip() == "source: /tmp/unet_cpu"


def test_numbers_get_the_precision_their_size_earns():
    assert number(115_727.5) == "115,728" and number(12.3456) == "12.35" and number(0.5) == "0.500"
    assert number(float("nan")) == "—"
    assert si(3_413_377_024) == "3.41 G" and si(1_950_814) == "1.95 M" and si(12_500, "B") == "12.5 kB"
    assert si(950) == "950"
    assert unit_in_title("MACs share (%)") == "%" and unit_in_title("Latency (ms)") == " ms"
    assert unit_in_title("Layer 3 (2)") == "" and unit_in_title("Time share") == ""
