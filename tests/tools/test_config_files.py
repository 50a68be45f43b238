"""Hand-edited settings and result files: each wrong type, missing key, bad value or broken syntax is a
UserError naming the file and the line or key, never a TypeError / ValueError / re.error from inside.

hosts.toml, deployments.toml, a workspace's studio.toml ``[[run]]`` tables, a profile folder's
studio_profile.json, a profiling CSV with a value beyond any time, and input sizes no computer holds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job

HOSTS = [  # (label, hosts.toml text, what the message must name)
    ("host is a number", '[hosts.a]\nhost = 5\n', "line 2: [hosts.a] host"),
    ("no host", '[hosts.a]\nport = 22\n', "[hosts.a] host"),
    ("port is text", '[hosts.a]\nhost = "x"\nport = "abc"\n', "line 3: [hosts.a] port"),
    ("port out of range", '[hosts.a]\nhost = "x"\nport = 99999\n', "line 3: [hosts.a] port"),
    ("port is a float", '[hosts.a]\nhost = "x"\nport = 22.5\n', "line 3: [hosts.a] port"),
    ("misspelled key", '[hosts.a]\nhost = "x"\nprot = 22\n', "line 1: [hosts.a]"),
    ("hosts not a table", 'hosts = 5\n', "[hosts]"),
    ("entry not a table", '[hosts]\na = 5\n', "[hosts.a]"),
    ("extra not a table", '[hosts.a]\nhost = "x"\nextra = 3\n', "line 3: [hosts.a] extra"),
    ("jump is a list", '[hosts.a]\nhost = "x"\nproxy_jump = ["b"]\n', "line 3: [hosts.a] proxy_jump"),
    ("bad TOML", '[hosts.a\nhost = "x"\n', "hosts.toml"),
    ("bad name", '[hosts."bad name"]\nhost = "x"\n', "line 1: [hosts.bad name]"),
]


@pytest.mark.parametrize(("text", "named"), [h[1:] for h in HOSTS], ids=[h[0] for h in HOSTS])
def test_hosts_toml_mistakes_name_file_and_key(tmp_path, text, named):
    from studio.remote.hosts import HostStore

    path = tmp_path / "hosts.toml"
    path.write_text(text)
    with pytest.raises(UserError) as caught:
        HostStore(path)
    assert str(path) in caught.value.where and named in caught.value.where, caught.value.format()


def test_hosts_toml_keeps_unknown_keys_of_later_versions(tmp_path):
    from studio.remote.hosts import HostStore

    path = tmp_path / "hosts.toml"
    path.write_text('[hosts.a]\nhost = "x"\ndeploy_root = "/srv/work"\n')
    assert HostStore(path).get("a").extra == {"deploy_root": "/srv/work"}


DEPLOYMENTS = [
    ("bad class range", "excludes = ['[z-a]']\n", "line 5: [deployments.d] excludes", "[z-a]"),
    ("unterminated class", "excludes = ['build/[!]']\n", "line 5: [deployments.d] excludes", "build/[!]"),
    ("excludes is text", "excludes = 'build'\n", "line 5: [deployments.d] excludes", "list of text"),
    ("host is a number", "", "[deployments.d] host", "host"),
]


@pytest.mark.parametrize(("extra", "named", "said"), [d[1:] for d in DEPLOYMENTS], ids=[d[0] for d in DEPLOYMENTS])
def test_deployments_toml_mistakes_name_file_and_key(tmp_path, extra, named, said):
    from studio.tools.deploy.deployments import DeploymentStore

    path = tmp_path / "deployments.toml"
    host = "host = 'box'" if extra else "host = 7"
    path.write_text(f"[deployments.d]\n{host}\nlocal = '{tmp_path}'\nremote = '/srv/proj'\n{extra}")
    with pytest.raises(UserError) as caught:
        DeploymentStore(path)
    assert named in caught.value.where and said in caught.value.what, caught.value.format()


def test_a_bad_exclude_on_the_command_line_is_named():
    from studio.targets.transfer.ignore import Excludes

    with pytest.raises(UserError) as caught:
        Excludes(["*.om", "[9-0]*"])
    assert "'[9-0]*'" in caught.value.what and caught.value.where == "--exclude"


RUNS = [
    ("run is a number", "run = 5\n", "studio.toml: [run]"),
    ("run is a single table", '[run]\nname = "x"\ncommand = "echo"\n', "line 1: [run]"),
    ("env holds a table", '[[run]]\nname = "x"\ncommand = "echo"\nenv = { A = { b = 1 } }\n',
     "line 4: [[run]] number 1 env"),
    ("target is a number", '[[run]]\nname = "x"\ncommand = "echo"\n\n[[run]]\nname = "y"\ncommand = "echo"\n'
     'target = 5\n', "line 8: [[run]] number 2 target"),
    ("NUL in the command", '[[run]]\nname = "x"\ncommand = "echo a\\u0000b"\n', "line 3: [[run]] number 1 command"),
    ("no name", '[[run]]\ncommand = "echo"\n', "[[run]] number 1 name"),
]


@pytest.mark.parametrize(("text", "named"), [r[1:] for r in RUNS], ids=[r[0] for r in RUNS])
def test_run_configurations_in_studio_toml_name_file_line_and_key(tmp_path, text, named):
    from studio.runs.config import load_configs
    from studio.core.workspace import Workspace

    (tmp_path / "studio.toml").write_text(text)
    with pytest.raises(UserError) as caught:
        load_configs(Workspace.open(tmp_path))
    assert named in caught.value.where, caught.value.format()


def test_a_nul_in_a_command_is_refused_before_it_runs():
    from studio.runs.config import RunConfig
    from studio.targets.base import shell_command
    from studio.targets.local import LocalTarget

    with pytest.raises(UserError, match="NUL"):
        RunConfig("x", "echo a\0b").validate()
    with pytest.raises(UserError, match="argument 2 holds a NUL"):
        shell_command(["printf", "a\0b"])
    with pytest.raises(UserError, match="argument 2 holds a NUL"):
        next(LocalTarget().run(["printf", "a\0b"]))


@pytest.fixture(scope="module")
def profile_folder(tmp_path_factory) -> Path:
    """A real `studio profile run` folder (ONNX Runtime, a small chain model)."""
    from accuracy_helpers import chain_model

    from studio.tools.profiler.local_run import profile_model

    root = tmp_path_factory.mktemp("prof")
    chain_model(root / "chain.onnx")
    run_job(profile_model(root / "chain.onnx", root / "prof", 2, 0))
    return root / "prof"


SUMMARIES = [
    ("a list", "[]", "studio_profile.json"),
    ("facts a number", {"facts": 5}, "key facts"),
    ("latency text", {"latency_ms": {"mean": "x"}}, "key latency_ms.mean"),
    ("iterations 1e999", '{"iterations": 1e999}', "key iterations"),
    ("model a number", {"model": 5}, "key model"),
    ("truncated", '{"model": "../chain.onn', "studio_profile.json"),
]


@pytest.mark.parametrize(("content", "named"), [s[1:] for s in SUMMARIES], ids=[s[0] for s in SUMMARIES])
def test_a_damaged_profile_summary_names_its_key(profile_folder, tmp_path, content, named):
    from studio.tools.advisor.loop import settings_of
    from studio.tools.profiler.loader import open_profile

    folder = tmp_path / "prof"
    shutil.copytree(profile_folder, folder)
    (folder / "studio_profile.json").write_text(content if isinstance(content, str) else json.dumps(content))
    for read in (lambda: run_job(open_profile(folder, use_cache=False)), lambda: settings_of(folder)):
        with pytest.raises(UserError) as caught:
            read()
        assert str(folder / "studio_profile.json") in caught.value.where and named in caught.value.where


@pytest.mark.parametrize("column", ["Task Start Time(us)", "Task Duration(us)"])
def test_a_profiling_csv_time_beyond_any_profile_names_row_and_column(profile_folder, tmp_path, column):
    import csv

    from studio.tools.profiler.msprof_reader import read_summary_csv

    rows = list(csv.reader((profile_folder / "op_summary.csv").open()))
    index = rows[0].index(column)
    rows[2][index] = "1e999"
    path = tmp_path / "op_summary.csv"
    csv.writer(path.open("w", newline="")).writerows(rows)
    with pytest.raises(UserError) as caught:
        run_job(read_summary_csv(path))
    assert caught.value.where == f"{path}, data row 2, column {column}" and "'1e999'" in caught.value.what


@pytest.mark.parametrize("size", [2 ** 62, 10 ** 12])
def test_an_input_no_computer_holds_is_refused_before_allocating(size):
    from studio.core.model_inputs import InputSpec, make_feeds, parse_input_shapes

    shapes = parse_input_shapes([f"x={size},4"])
    with pytest.raises(UserError) as caught:
        make_feeds([InputSpec("x", ("N", 4))], shapes=shapes)
    assert "of memory" in caught.value.what and caught.value.where == "--input-shape x"
    assert make_feeds([InputSpec("x", ("N", 4))], shapes={"x": (2, 4)})["x"].dtype == np.float32


def test_a_dimension_beyond_int64_is_refused_when_read():
    from studio.core.model_inputs import parse_input_shapes

    with pytest.raises(UserError, match="beyond 2\\^63-1"):
        parse_input_shapes(["x=99999999999999999999,4"])
