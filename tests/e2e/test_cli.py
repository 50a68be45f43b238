"""The command line, run as a user runs it: in a subprocess, through the installed entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from studio import __version__

REPO = Path(__file__).resolve().parents[2]


def studio_command() -> list[str]:
    """The installed `studio` script next to this interpreter, else `python -m studio`."""
    script = Path(sys.executable).parent / "studio"
    return [str(script)] if script.exists() else [sys.executable, "-m", "studio"]


def run_studio(*args: str, home: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "STUDIO_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([*studio_command(), *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)


def test_version(studio_home):
    result = run_studio("--version", home=studio_home)
    assert result.returncode == 0
    assert result.stdout.strip() == f"studio {__version__}"


def test_help_lists_the_headless_commands(studio_home):
    result = run_studio("--help", home=studio_home)
    assert result.returncode == 0
    for command in ("demo", "info", "screenshot"):
        assert f"  {command} " in result.stdout


def test_python_dash_m_is_the_same_command(studio_home):
    env = {**os.environ, "STUDIO_HOME": str(studio_home)}
    result = subprocess.run([sys.executable, "-m", "studio", "--version"], capture_output=True, text=True, env=env)
    assert result.stdout.strip() == f"studio {__version__}"


def test_info_json_on_real_files(studio_home, ascend_fixtures):
    result = run_studio("info", "--json", str(ascend_fixtures / "om" / "root_model.om"),
                        str(ascend_fixtures / "pytorch_npu"), home=studio_home)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [(r["format"], r["panel"]) for r in rows] == [("om", "graph"), ("pytorch_npu_dir", "profiler")]
    assert rows[0]["size"] == (ascend_fixtures / "om" / "root_model.om").stat().st_size


def test_info_on_a_corrupt_file_says_why_and_fails(studio_home, ascend_fixtures):
    result = run_studio("info", str(ascend_fixtures / "om" / "not_an_om.om"), home=studio_home)
    assert result.returncode == 1
    assert "not_an_om.om: error: Not a valid Ascend OM model" in result.stdout
    assert "IMOD" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_unknown_command_argument_errors_cleanly(studio_home):
    result = run_studio("demo", "explode", home=studio_home)
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


@pytest.mark.slow
def test_demo_create_writes_a_workspace(studio_home, tmp_path):
    target = tmp_path / "demo"
    result = run_studio("demo", "create", str(target), home=studio_home)
    assert result.returncode == 0, result.stderr
    for name in ("unet.onnx", "ssd_detector.onnx", "colorization.onnx", "classifier.onnx"):
        assert (target / "models" / name).stat().st_size > 1000
    assert (target / "studio.toml").is_file()
    assert list((target / "images").glob("*.png"))
    again = run_studio("demo", "create", str(target), home=studio_home)  # safe to run again
    assert again.returncode == 0, again.stderr


def test_demo_create_refuses_a_foreign_folder(studio_home, tmp_path):
    (tmp_path / "thesis.tex").write_text("precious")
    result = run_studio("demo", "create", str(tmp_path), home=studio_home)
    assert result.returncode == 2
    assert "error:" in result.stderr and str(tmp_path) in result.stderr
    assert (tmp_path / "thesis.tex").read_text() == "precious"


@pytest.mark.slow
def test_screenshot_renders_window_and_every_panel(studio_home, tmp_path):
    out = tmp_path / "shots"
    result = run_studio("screenshot", "-o", str(out), "--demo", home=studio_home, timeout=300)
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in out.glob("*.png") if not p.name.endswith("_selected.png"))
    from studio.ui.panels.registry import PANELS

    assert names == sorted(["main_window.png", "panel_workspace.png", "panel_log.png",
                            *(f"panel_{spec.name}.png" for spec in PANELS)])
    from PySide6.QtGui import QImage

    window = QImage(str(out / "main_window.png"))
    assert (window.width(), window.height()) == (1400, 900)
    # Not a blank image: a rendered window has many distinct colours (text, frames, selection).
    colours = {window.pixel(x, y) for x in range(0, 1400, 7) for y in range(0, 900, 7)}
    assert len(colours) > 20
    graph = QImage(str(out / "panel_graph.png"))
    assert graph.width() > 300 and graph.height() > 200


def test_gui_starts_and_shows_its_window(studio_home):
    result = run_studio("--startup-probe", home=studio_home, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "shown_at=" in result.stdout
    assert (studio_home / "logs" / "studio.log").is_file()
    assert (studio_home / "config" / "window.ini").is_file(), "closing must save the window layout"


def test_no_display_gives_a_clear_message(studio_home):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(STUDIO_HOME=str(studio_home), QT_QPA_PLATFORM="xcb")
    result = subprocess.run([*studio_command(), "--startup-probe"], capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 1
    assert "No display found" in result.stderr and "studio screenshot" in result.stderr


def test_output_piped_into_a_closed_reader_ends_quietly(studio_home, ascend_fixtures):
    """`studio ... | head` must not print a BrokenPipeError traceback."""
    env = {**os.environ, "STUDIO_HOME": str(studio_home)}
    proc = subprocess.Popen([*studio_command(), "profile", "stats", "--json", "--top", "100000",
                             str(ascend_fixtures / "pytorch_npu" / "trace_view.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err
