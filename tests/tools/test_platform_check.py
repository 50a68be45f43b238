"""Before Qt starts: no display, or missing X11 libraries, give a message with the fix."""

from __future__ import annotations

import sys

import pytest

from studio.ui import platform_check

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 checks are Linux-only")


def test_offscreen_needs_nothing(monkeypatch):
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.delenv("DISPLAY", raising=False)
    assert platform_check.window_problem() is None


def test_no_display_is_explained(monkeypatch):
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    problem = platform_check.window_problem()
    assert "No display found" in problem and "studio screenshot" in problem


def test_missing_x11_library_names_the_package(monkeypatch):
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    libraries = {"libc.so.6": "libc6", "libstudio-not-there.so.9": "libstudio-not-there9"}
    problem = platform_check.window_problem(libraries)
    assert "libstudio-not-there.so.9" in problem
    assert "sudo apt-get install libstudio-not-there9" in problem
    assert "libc.so.6" not in problem
    assert platform_check.window_problem({"libc.so.6": "libc6"}) is None
