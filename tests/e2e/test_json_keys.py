"""Every ``--json`` output keeps its keys: the key paths of each command's output on the demo
workspace and the real Ascend files, compared with the ones recorded in data/json_keys.json.
(Values change from run to run, timings above all; keys must not. Add keys rather than rename.)
Keys under an ``optional`` prefix appear only when the data calls for them (outliers of a timing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_cli import run_studio

RECORDED = json.loads((Path(__file__).parent / "data" / "json_keys.json").read_text(encoding="utf-8"))


def key_paths(value, prefix: str = "") -> set[str]:
    """``a``, ``a.b``, ``a.[].c``: every key of a JSON value, list items merged."""
    if isinstance(value, dict):
        out = set()
        for key, item in value.items():
            out |= {prefix + key} | key_paths(item, f"{prefix}{key}.")
        return out
    if isinstance(value, list):
        return set().union(*(key_paths(item, prefix + "[].") for item in value)) if value else set()
    return set()


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("keys") / "demo"
    done = run_studio("demo", "create", str(folder), home=folder.parent)
    assert done.returncode == 0, done.stderr
    return folder


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_json_keys_are_unchanged(name, demo, ascend_fixtures, tmp_path, studio_home):
    argv = [a.format(demo=demo, fixtures=ascend_fixtures.parent, tmp=tmp_path) for a in RECORDED[name]["argv"]]
    done = run_studio(*argv, home=studio_home, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    optional = tuple(RECORDED[name].get("optional", ()))
    keys = {k for k in key_paths(json.loads(done.stdout)) if not k.startswith(optional)}
    recorded = {k for k in RECORDED[name]["keys"] if not k.startswith(optional)}
    assert not recorded - keys, f"keys gone from `studio {name} --json`: {sorted(recorded - keys)}"
    assert not keys - recorded, f"new keys in `studio {name} --json` (record them): {sorted(keys - recorded)}"
