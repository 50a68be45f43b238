"""Before Qt starts: can a window open here? If not, say exactly why and what to install.

Without this, Qt aborts with "could not load the Qt platform plugin xcb" and guesses at the cause.
"""

from __future__ import annotations

import ctypes
import os
import sys

# What Qt's X11 (xcb) platform plugin loads, with the Debian/Ubuntu package that provides it.
XCB_LIBRARIES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
}


def _uses_xcb() -> bool:
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform:
        return platform.startswith("xcb")
    return bool(os.environ.get("DISPLAY")) and not os.environ.get("WAYLAND_DISPLAY")


def missing_display() -> str | None:
    """Explain why no window can open here (Linux without a display), or None when one can."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if not sys.platform.startswith("linux") or platform.startswith(("offscreen", "minimal", "vnc", "eglfs")):
        return None
    if platform.startswith("wayland") and os.environ.get("WAYLAND_DISPLAY"):
        return None
    if os.environ.get("DISPLAY") or (not platform and os.environ.get("WAYLAND_DISPLAY")):
        return None
    return ("No display found (DISPLAY is not set), so the workbench window cannot open. "
            "Run Studio in a desktop session or over ssh -X; for headless use, the commands "
            "(`studio --help`) need no display, and `studio screenshot -o DIR` renders the window to PNG.")


def missing_xcb_libraries(libraries: dict[str, str] | None = None) -> list[str]:
    """Sonames the X11 plugin needs that cannot be loaded here (empty when all are present)."""
    missing = []
    for soname in libraries or XCB_LIBRARIES:
        try:
            ctypes.CDLL(soname)
        except OSError:
            missing.append(soname)
    return missing


def window_problem(libraries: dict[str, str] | None = None) -> str | None:
    """The reason a window cannot open here, with the fix; None when nothing is in the way."""
    problem = missing_display()
    if problem or not sys.platform.startswith("linux") or not _uses_xcb():
        return problem
    libraries = libraries or XCB_LIBRARIES
    missing = missing_xcb_libraries(libraries)
    if not missing:
        return None
    packages = " ".join(libraries[name] for name in missing)
    return (f"Qt cannot open a window on this X11 display: system libraries are missing "
            f"({', '.join(missing)}).\n  fix:   install them, e.g. `sudo apt-get install {packages}` "
            f"on Debian/Ubuntu (other distributions name the packages similarly).")
