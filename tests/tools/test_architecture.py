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


CONTRACTS = ("Engines stay Qt-free",
             "Layers: ui | commands > tools > targets > remote > core",
             "Engines: corpus, demo > advisor > the other engines",
             "Tool engines are independent of each other",
             "Only the remote layer and the SSH target import paramiko",
             "The GUI does not import runs, targets or remote directly",
             "Panels are independent of each other",
             "Panel state stays Qt-free")


def test_engines_do_not_import_qt():
    result = lint_imports()
    assert result.returncode == 0, result.stdout + result.stderr
    for contract in CONTRACTS:
        assert f"{contract} KEPT" in result.stdout, result.stdout


def _contracts() -> list[dict]:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _top_level_modules() -> set[str]:
    """``studio.x`` for every module file and package directly in ``studio/`` (not ``__init__``)."""
    names = {f"studio.{p.stem}" for p in (REPO / "studio").glob("*.py") if p.stem != "__init__"}
    return names | {f"studio.{p.parent.name}" for p in (REPO / "studio").glob("*/__init__.py")}


def test_every_module_is_in_a_layer():
    layers = next(c for c in _contracts() if c["type"] == "layers" and "containers" not in c)["layers"]
    named = {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}
    optional = {name for name in named if name.startswith("(")}  # "(x)": a layer that may not exist yet
    assert sorted(_top_level_modules() - named - {name.strip("()") for name in optional}) == []
    assert sorted(named - optional - _top_level_modules()) == []


def test_everything_outside_the_gui_is_in_the_qt_free_contract():
    sources = set(next(c for c in _contracts() if c["name"] == "Engines stay Qt-free")["source_modules"])
    # The CLI and its commands reach the GUI on purpose (the app, screenshots, PNG export).
    outside = _top_level_modules() - {"studio.ui", "studio.cli", "studio.__main__", "studio.commands"}
    assert sorted(outside - sources) == []


# Each contract hole, closed: one import injected into a copy of the package breaks the named
# contract (and names the import).
INJECTIONS = [
    ("studio/terminal/vt.py", "import PySide6", "Engines stay Qt-free", "studio.terminal.vt -> PySide6"),
    ("studio/remote/hosts.py", "import pyqtgraph", "Engines stay Qt-free", "studio.remote.hosts -> pyqtgraph"),
    ("studio/core/npyfile.py", "import PySide6.QtCore", "Engines stay Qt-free", "studio.core.npyfile -> PySide6"),
    ("studio/tools/graph/model.py", "import studio.tools.advisor.model",
     "Engines: corpus, demo > advisor > the other engines", "studio.tools.graph.model -> studio.tools.advisor.model"),
    ("studio/tools/profiler/model.py", "import studio.tools.corpus.manifest",
     "Engines: corpus, demo > advisor > the other engines", "studio.tools.profiler.model -> studio.tools.corpus.manifest"),
    ("studio/tools/advisor/model.py", "import studio.tools.demo.models",
     "Engines: corpus, demo > advisor > the other engines", "studio.tools.advisor.model -> studio.tools.demo.models"),
    ("studio/runs/config.py", "import paramiko", "Only the remote layer and the SSH target import paramiko",
     "studio.runs.config -> paramiko"),
    ("studio/core/workers.py", "import paramiko", "Only the remote layer and the SSH target import paramiko",
     "studio.core.workers -> paramiko"),
    ("studio/ui/numfmt.py", "import studio.commands.info", "Layers: ui | commands > tools > targets > remote > core",
     "studio.ui.numfmt -> studio.commands.info"),
    ("studio/commands/info.py", "import studio.ui.numfmt", "Layers: ui | commands > tools > targets > remote > core",
     "studio.commands.info -> studio.ui.numfmt"),
    ("studio/core/worker_priority.py", "import studio.runs.config", "Layers: ui | commands > tools > targets > remote > core",
     "studio.core.worker_priority -> studio.runs.config"),
    ("studio/core/ortmsg.py", "import studio.tools.graph", "Layers: ui | commands > tools > targets > remote > core",
     "studio.core.ortmsg -> studio.tools.graph"),
    ("studio/ui/links.py", "import studio.runs.config", "The GUI does not import runs, targets or remote directly",
     "studio.ui.links -> studio.runs.config"),
    ("studio/ui/panels/graph/panel.py", "import studio.targets.local",
     "The GUI does not import runs, targets or remote directly", "studio.ui.panels.graph.panel -> studio.targets.local"),
    ("studio/ui/widgets/log_view.py", "import studio.remote.hosts",
     "The GUI does not import runs, targets or remote directly", "studio.ui.widgets.log_view -> studio.remote.hosts"),
    ("studio/ui/panels/deploy/panel.py", "import studio.ui.panels.graph.panel", "Panels are independent of each other",
     "studio.ui.panels.deploy.panel -> studio.ui.panels.graph.panel"),
]


def _section(output: str, contract: str) -> str:
    """What lint-imports says under ``contract`` in its list of broken contracts."""
    start = output.find(f"\n{contract}\n---")
    if start < 0:
        return ""
    rest = output[start + len(contract) + 2:]
    ends = [i for i in (rest.find(f"\n{c}\n---") for c in CONTRACTS) if i > 0]
    return rest[:min(ends)] if ends else rest


def test_each_contract_catches_the_import_it_forbids(tmp_path):
    import shutil

    shutil.copytree(REPO / "studio", tmp_path / "studio", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    script = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    missed = []
    for file, line, contract, expected in INJECTIONS:
        path = tmp_path / file
        original = path.read_text(encoding="utf-8")
        path.write_text(original + "\n" + line + "\n", encoding="utf-8")
        try:
            result = subprocess.run([str(script), "--no-cache"], capture_output=True, text=True, cwd=tmp_path,
                                    env=env, timeout=120)
        finally:
            path.write_text(original, encoding="utf-8")
        if result.returncode == 0 or f"{contract} BROKEN" not in result.stdout \
                or expected not in " ".join(_section(result.stdout, contract).split()):
            missed.append(f"{file}: {line!r} did not break {contract!r}")
    assert missed == []


def test_the_layers_contract_catches_an_upward_import(tmp_path):
    # The remote layer importing a target would be an upward import: the real contract must say so.
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    package = tmp_path / "studio"
    for name in ("", "remote", "targets", "runs", "tools", "terminal", "ops", "ui", "commands"):
        (package / name).mkdir(parents=True, exist_ok=True)
        (package / name / "__init__.py").write_text("")
    for layer in layers:
        for name in layer.replace("|", ":").split(":"):
            module = name.strip().strip("()").removeprefix("studio.")
            if not (package / module).is_dir():
                (package / f"{module}.py").write_text("")
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
    # A contract we know is broken (studio.core.jobs does import studio.core.errors) must be reported.
    config = tmp_path / "broken.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "studio"\n\n[[tool.importlinter.contracts]]\n'
        'name = "deliberately broken"\ntype = "forbidden"\nsource_modules = ["studio.core.jobs"]\n'
        'forbidden_modules = ["studio.core.errors"]\n')
    result = lint_imports("--config", str(config))
    assert result.returncode != 0
    assert "deliberately broken BROKEN" in result.stdout


def test_cli_start_does_not_load_heavy_packages():
    # `studio --help` and the command table must not pay for Qt, onnx, onnxruntime, paramiko or cv2.
    code = ("import sys; from studio import cli; cli._command_modules(); "
            "heavy = [m for m in ('PySide6', 'onnx', 'onnxruntime', 'paramiko', 'cv2', 'pyqtgraph', 'numba') if m in sys.modules]; "
            "print(','.join(heavy))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env={**os.environ}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_main_window_does_not_load_engines_eagerly():
    code = ("import sys; import studio.ui.main_window; "
            "heavy = [m for m in ('onnx', 'onnxruntime', 'paramiko', 'cv2', 'pyqtgraph', 'numba') if m in sys.modules]; "
            "print(','.join(heavy))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
