"""Write a laid-out view as SVG, without Qt (so ``studio graph export`` works headless)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from xml.sax.saxutils import escape

from studio.core.jobs import CancelToken, Progress
from studio.tools.graph.categories import CATEGORY_COLOURS
from studio.tools.graph.view import ViewGraph

MARGIN = 20.0


def _text_colour(fill: str) -> str:
    r, g, b = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
    return "#1f1f1f" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 150 else "#ffffff"


def svg_text(view: ViewGraph, overlay_colours: dict[int, str] | None = None) -> str:
    """The SVG document of ``view``; ``overlay_colours`` maps item index -> fill colour."""
    lay = view.layout
    left, top, right, bottom = lay.bounds
    for _, (l, t, r, b) in view.frames:
        left, top, right, bottom = min(left, l), min(top, t), max(right, r), max(bottom, b)
    width, height = right - left + 2 * MARGIN, bottom - top + 2 * MARGIN
    ox, oy = MARGIN - left, MARGIN - top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="11">',
           f"<title>{escape(view.graph.name)}</title>",
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>',
           '<rect width="100%" height="100%" fill="#ffffff"/>']
    for gid, (l, t, r, b) in view.frames:
        out.append(f'<g class="frame"><rect x="{l + ox:.1f}" y="{t + oy:.1f}" width="{r - l:.1f}" height="{b - t:.1f}" '
                   f'rx="6" fill="#f3f5f9" stroke="#c9d1dc"/><text x="{l + ox + 6:.1f}" y="{t + oy + 13:.1f}" '
                   f'fill="#6a7585">{escape(view.group_labels.get(gid, ""))}</text></g>')
    out.append('<g class="edges" fill="none" stroke="#777" stroke-width="1">')
    for k in range(lay.edge_src.size):
        pts = lay.edge_polyline(k)
        d = " ".join(f"{x + ox:.1f},{y + oy:.1f}" for x, y in pts)
        dash = ' stroke-dasharray="5,4"' if k in view.references else ""  # a reference, not data flow
        out.append(f'<polyline points="{d}" marker-end="url(#arrow)"{dash}/>')
    out.append("</g>")
    out.append('<g class="nodes">')
    for i, item in enumerate(view.items):
        x, y, w, h = lay.x[i] + ox, lay.y[i] + oy, lay.width[i], lay.height[i]
        fill = (overlay_colours or {}).get(i) or CATEGORY_COLOURS.get(item.category, "#55606e")
        ink = _text_colour(fill)
        rx = 14 if item.kind in ("input", "output") else 4
        out.append(f'<g class="{item.kind}"><title>{escape(item.name)}</title>'
                   f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx}" '
                   f'fill="{fill}" stroke="#333" stroke-width="0.6"/>')
        if item.sublabel:
            out.append(f'<text x="{x:.1f}" y="{y - 2:.1f}" text-anchor="middle" fill="{ink}" font-weight="bold">'
                       f'{escape(item.label)}</text><text x="{x:.1f}" y="{y + 10:.1f}" text-anchor="middle" '
                       f'fill="{ink}" font-size="9">{escape(item.sublabel)}</text></g>')
        else:
            out.append(f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle" fill="{ink}" font-weight="bold">'
                       f'{escape(item.label)}</text></g>')
    out.append("</g></svg>")
    return "\n".join(out)


def export_svg(view: ViewGraph, path: Path, overlay_colours: dict[int, str] | None = None,
               cancel: CancelToken | None = None) -> Generator[Progress, None, Path]:
    """Job: write ``view`` to ``path`` as SVG."""
    path = Path(path)
    yield Progress(None, f"writing {path.name}")
    text = svg_text(view, overlay_colours)
    if cancel is not None:
        cancel.raise_if_cancelled()
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        from studio.core.errors import UserError

        raise UserError(f"Cannot write the SVG file: {exc.strerror}", path,
                        "Choose a file in an existing folder you can write to.") from exc
    yield Progress(1.0, f"wrote {path.name}")
    return path
