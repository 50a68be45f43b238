"""The gallery panel: pictures of an infer run with their overlays, sorted by metric, runs compared."""

from studio.ui.panels.gallery.panel import GalleryPanel

__all__ = ["GalleryPanel"]
