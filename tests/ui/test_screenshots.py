"""Every panel at 1,280 × 720 and 1,920 × 1,080, empty and with the demo workspace: rendered, and no
text cut without a tooltip holding it (labels, buttons, tabs, headers, cells, dock titles)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QImage

from studio.core.errors import UserError
from studio.ui.panels.registry import PANELS
from studio.ui.screenshot import parse_size, take_screenshots
from studio.ui.text_check import find_cut_text

SIZES = [(1280, 720), (1920, 1080)]


@pytest.mark.slow
@pytest.mark.parametrize("demo", [False, True], ids=["empty", "demo"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_panel_renders_with_no_cut_text(qtbot, tmp_path, size, demo):
    cut: dict[str, list[str]] = {}

    def check(name, widget) -> None:
        found = [str(c) for c in find_cut_text(widget)]
        if found:
            cut[name] = found

    written = take_screenshots(tmp_path, demo=demo, size=size, check=check)
    names = {p.name for p in written}
    selected = {f"panel_{name}_selected.png" for name in ("graph", "profiler", "accuracy", "advisor", "convert")}
    assert names == {"main_window.png", "panel_workspace.png", "panel_log.png",
                     *(f"panel_{spec.name}.png" for spec in PANELS), *(selected if demo else ())}
    window = QImage(str(tmp_path / "main_window.png"))
    assert (window.width(), window.height()) == size  # the window is not wider than the screen asked for
    colours = {window.pixel(x, y) for x in range(0, size[0], 9) for y in range(0, size[1], 9)}
    assert len(colours) > 20  # a rendered window, not a blank image
    assert cut == {}, "\n".join(line for lines in cut.values() for line in lines)


def test_size_is_parsed_or_refused_with_a_fix():
    assert parse_size("1280x720") == (1280, 720) and parse_size("1920×1080") == (1920, 1080)
    for bad in ("1280", "wide", "100x100"):
        with pytest.raises(UserError) as caught:
            parse_size(bad)
        assert "1280x720" in caught.value.fix
