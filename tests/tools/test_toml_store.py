"""The one store of named TOML tables that hosts.toml and deployments.toml are both kept in."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from studio.core.errors import UserError
from studio.core.toml_fields import TomlPlace, expect_int, expect_table
from studio.core.toml_store import NamedTableStore, check_entry_name


@dataclass
class Board:
    name: str
    cores: int

    def __post_init__(self):
        check_entry_name(self.name, "Board", "board")

    def to_table(self) -> dict:
        return {"cores": self.cores}

    @classmethod
    def from_table(cls, name: str, table: dict, place: TomlPlace | None = None) -> Board:
        expect_table(table, place(("boards", name)) if place else name, "[boards.NAME]")
        return cls(name, expect_int(table, "cores", place(("boards", name), "cores") if place else "cores", 1, 512))


class BoardStore(NamedTableStore[Board], section="boards", noun="board", entry_type=Board,
                 add_hint="Add it with `studio board add {name}`."):
    """Single-board computers, as a later feature might keep them."""


def test_entries_round_trip_sorted_by_name(tmp_path):
    store = BoardStore(tmp_path / "boards.toml")
    assert store.entries == {} and not store.path.exists()  # a missing file is an empty store
    store.put(Board("zeta", 8))
    store.put(Board("alpha", 4))
    store.save()
    text = store.path.read_text()
    assert text.index("[boards.alpha]") < text.index("[boards.zeta]")
    again = BoardStore(store.path)
    assert again.entries == {"alpha": Board("alpha", 4), "zeta": Board("zeta", 8)}
    again.remove("zeta")
    again.save()
    assert list(BoardStore(store.path).entries) == ["alpha"]
    assert again.boards is again.entries  # the entries under the section's name, as store.hosts


def test_the_file_is_named_after_the_section_in_the_config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("STUDIO_HOME", str(tmp_path))
    store = BoardStore()
    store.put(Board("alpha", 2))
    store.save()
    assert store.path.name == "boards.toml" and store.path.is_file() and tmp_path in store.path.parents


def test_a_missing_entry_names_the_known_ones_and_how_to_add_it(tmp_path):
    store = BoardStore(tmp_path / "boards.toml")
    store.put(Board("alpha", 4))
    with pytest.raises(UserError) as caught:
        store.get("beta")
    error = caught.value
    assert error.what == "No board called 'beta'" and error.where == str(store.path)
    assert error.fix == "Add it with `studio board add beta`. Known boards: alpha."
    with pytest.raises(UserError):
        store.remove("beta")


def test_a_bad_file_names_its_line(tmp_path):
    path = tmp_path / "boards.toml"
    path.write_text('[boards.alpha]\ncores = 4\n\n[boards.beta]\ncores = "many"\n')
    with pytest.raises(UserError) as caught:
        BoardStore(path)
    assert "line 5" in str(caught.value.where) and "cores" in str(caught.value.where)
    path.write_text("boards = 5\n")
    with pytest.raises(UserError) as caught:
        BoardStore(path)
    assert "[boards.NAME] tables" in caught.value.format()


@pytest.mark.parametrize("name", ["", "-x", "a b", "x" * 65, "a/b"])
def test_names_a_user_cannot_type_back_are_refused(name):
    with pytest.raises(UserError) as caught:
        Board(name, 1)
    assert caught.value.what == f"Board name {name!r} is not usable"


def test_hosts_and_deployments_are_kept_in_the_one_store(tmp_path):
    from studio.remote.hosts import HostEntry, HostStore
    from studio.tools.deploy.deployments import Deployment, DeploymentStore

    hosts = HostStore(tmp_path / "hosts.toml")
    deployments = DeploymentStore(tmp_path / "deployments.toml")
    assert isinstance(hosts, NamedTableStore) and isinstance(deployments, NamedTableStore)
    hosts.put(HostEntry("npu", "10.0.0.5", user="me"))
    hosts.save()
    deployments.put(Deployment("proj", "npu", str(tmp_path), "~/proj", ["*.om"]))
    deployments.save()
    assert HostStore(hosts.path).hosts["npu"].address == "me@10.0.0.5:22"
    assert DeploymentStore(deployments.path).deployments["proj"].excludes == ["*.om"]
    with pytest.raises(UserError) as caught:
        HostStore(hosts.path).get("gpu")
    assert caught.value.fix == "Add it with `studio ssh add gpu --host HOSTNAME`. Known hosts: npu."
