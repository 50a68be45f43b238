"""Rules of direction: engines stay Qt-free (import-linter), and heavy packages load lazily."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def lint_imports(*args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "lint-imports"
    return subprocess.run([str(script), *args], capture_output=True, text=True, cwd=REPO, timeout=120)


def test_engines_do_not_import_qt():
    result = lint_imports()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Engines stay Qt-free KEPT" in result.stdout


def test_the_contract_check_really_looks_at_imports(tmp_path):
    # A contract we know is broken (studio.jobs does import studio.errors) must be reported.
    config = tmp_path / "broken.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "studio"\n\n[[tool.importlinter.contracts]]\n'
        'name = "deliberately broken"\ntype = "forbidden"\nsource_modules = ["studio.jobs"]\n'
        'forbidden_modules = ["studio.errors"]\n')
    result = lint_imports("--config", str(config))
    assert result.returncode != 0
    assert "deliberately broken BROKEN" in result.stdout


def test_cli_start_does_not_load_heavy_packages():
    # `studio --help` and the command table must not pay for Qt, onnx, onnxruntime, paramiko or cv2.
    code = ("import sys; from studio import cli; cli._command_modules(); "
            "heavy = [m for m in ('PySide6', 'onnx', 'onnxruntime', 'paramiko', 'cv2', 'pyqtgraph') if m in sys.modules]; "
            "print(','.join(heavy))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env={**os.environ}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_main_window_does_not_load_engines_eagerly():
    code = ("import sys; import studio.ui.main_window; "
            "heavy = [m for m in ('onnx', 'onnxruntime', 'paramiko', 'cv2', 'pyqtgraph') if m in sys.modules]; "
            "print(','.join(heavy))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
