"""`studio ssh add --key FILE` warns when FILE does not exist (the entry is saved all the same)."""

from __future__ import annotations

from studio.cli import main
from studio.remote.hosts import HostStore


def test_ssh_add_warns_about_a_missing_key_file(tmp_path, capsys):
    missing = tmp_path / "id_nowhere"
    assert main(["ssh", "add", "box", "--host", "10.0.0.5", "--key", str(missing)]) == 0
    out, err = capsys.readouterr()
    assert "added box" in out
    assert f"the key file {missing} does not exist" in err and "ssh-keygen" in err
    assert HostStore().get("box").key_file == str(missing)  # saved all the same
    present = tmp_path / "id_here"
    present.write_text("not checked here, only that it is there")
    assert main(["ssh", "add", "box2", "--host", "10.0.0.6", "--key", str(present)]) == 0
    assert "warning" not in capsys.readouterr().err
