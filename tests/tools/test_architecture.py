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
    for contract in ("Layers: ui | commands > tools > targets > remote > core",
                     "Tool engines are independent of each other",
                     "Only the remote layer and the SSH target import paramiko"):
        assert f"{contract} KEPT" in result.stdout


def test_the_layers_contract_catches_an_upward_import(tmp_path):
    # The remote layer importing a target would be an upward import: the real contract must say so.
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    package = tmp_path / "studio"
    for name in ("", "remote", "targets", "runs", "tools", "terminal", "ops", "ui", "commands"):
        (package / name).mkdir(parents=True, exist_ok=True)
        (package / name / "__init__.py").write_text("")
    for name in ("cli", "errors", "jobs", "paths", "settings", "toml_store", "toml_fields", "logs", "formats", "profile", "workspace",
                 "assets", "model_inputs", "ort_providers", "ab", "output_lock"):
        (package / f"{name}.py").write_text("")
    (package / "remote" / "__init__.py").write_text("import studio.targets\n")
    broken = tmp_path / "layers.toml"
    broken.write_text('[tool.importlinter]\nroot_package = "studio"\n\n[[tool.importlinter.contracts]]\n'
                      'name = "layers"\ntype = "layers"\nlayers = [' + ", ".join(f'"{x}"' for x in layers) + "]\n")
    script = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(script), "--config", str(broken)], capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert result.returncode != 0 and "studio.remote -> studio.targets" in result.stdout, result.stdout


def test_no_panel_or_command_builds_its_own_host_store_or_known_hosts():
    # One HostContext per window / CLI run holds them (and the connection pool).
    offenders = []
    for folder in ("studio/ui", "studio/commands", "studio/tools", "studio/terminal"):
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for name in ("HostStore(", "KnownHosts(", "connect_remembering(", "default_known_hosts("):
                if name in text:
                    offenders.append(f"{path.relative_to(REPO)}: {name}")
    assert offenders == []


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
