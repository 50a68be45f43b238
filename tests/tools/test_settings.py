"""Per-user settings and workspace files: round trips, STUDIO_HOME, broken files kept safe."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core import paths
from studio.core.errors import UserError
from studio.core.settings import MAX_RECENT_FILES, UserSettings
from studio.core.workspace import Workspace


def test_studio_home_overrides_every_user_folder(studio_home):
    for folder in (paths.config_dir(), paths.data_dir(), paths.cache_dir(), paths.log_dir()):
        assert folder.is_dir()
        assert studio_home in folder.parents


def test_settings_round_trip(tmp_path):
    files = [tmp_path / f"model{i}.onnx" for i in range(3)]
    for f in files:
        f.write_bytes(b"x")
    settings = UserSettings.load()
    for f in files:
        settings.add_recent_file(f)
    settings.add_recent_file(files[0])  # re-opening moves it to the top, without a duplicate
    settings.last_workspace = tmp_path
    settings.save()

    again = UserSettings.load()
    assert again.recent_files == [files[0], files[2], files[1]]
    assert again.last_workspace == tmp_path
    assert again.path.parent == paths.config_dir()


def test_recent_files_are_bounded_and_skip_deleted(tmp_path):
    settings = UserSettings.load()
    for i in range(MAX_RECENT_FILES + 5):
        f = tmp_path / f"f{i}.npy"
        f.write_bytes(b"x")
        settings.add_recent_file(f)
    assert len(settings.recent_files) == MAX_RECENT_FILES
    (tmp_path / f"f{MAX_RECENT_FILES + 4}.npy").unlink()
    assert len(settings.recent_files) == MAX_RECENT_FILES - 1


def test_broken_settings_file_is_kept_aside_not_overwritten():
    path = paths.config_dir() / "settings.toml"
    path.write_text("recent_files = [unclosed\n")
    settings = UserSettings.load()
    assert settings.data == {}
    problem = settings.load_problem
    assert problem is not None and "line 1" in problem.what and str(path) == problem.where
    kept = list(path.parent.glob("settings.toml.broken-*"))
    assert len(kept) == 1 and kept[0].read_text() == "recent_files = [unclosed\n"
    settings.save()  # the fresh file does not touch the kept copy
    assert kept[0].read_text() == "recent_files = [unclosed\n"


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path):
    settings = UserSettings(tmp_path / "s.toml", {"recent_files": ["/a"], "skip": None})
    settings.save()
    assert [p.name for p in tmp_path.iterdir()] == ["s.toml"]
    assert "skip" not in (tmp_path / "s.toml").read_text()


def test_workspace_round_trip_with_relative_paths(tmp_path):
    ws = Workspace.create(tmp_path / "proj", name="Face mask")
    (ws.folder / "models").mkdir()
    model = ws.folder / "models" / "ssd.onnx"
    model.write_bytes(b"x")
    ws.add_artifact(model, "onnx")
    ws.set_table("hosts", [{"name": "atlas", "host": "10.0.0.5", "port": 22, "user": "HwHiAiUser"}])
    ws.save()
    text = ws.settings_path.read_text()
    assert 'path = "models/ssd.onnx"' in text  # portable: relative inside the workspace

    again = Workspace.open(tmp_path / "proj")
    assert again.name == "Face mask"
    assert again.recent_artifacts[0].path == model
    assert again.recent_artifacts[0].kind == "onnx"
    assert again.table("hosts")[0]["host"] == "10.0.0.5"


def test_workspace_errors_name_the_folder_and_the_fix(tmp_path):
    with pytest.raises(UserError) as info:
        Workspace.open(tmp_path)
    assert "Not a Studio workspace" in info.value.what and info.value.fix
    (tmp_path / "studio.toml").write_text("[workspace]\nformat = 99\n")
    with pytest.raises(UserError, match="newer"):
        Workspace.open(tmp_path)
    (tmp_path / "studio.toml").write_text("[workspace\n")
    with pytest.raises(UserError, match="line 1"):
        Workspace.open(tmp_path)


def test_create_keeps_an_existing_workspace(tmp_path):
    ws = Workspace.create(tmp_path, name="Mine")
    ws.set_table("deployments", [{"name": "d"}])
    ws.save()
    assert Workspace.create(tmp_path, name="Other").table("deployments") == [{"name": "d"}]
    assert Workspace.open(Path(tmp_path)).name == "Mine"
