"""Layer mapping (msprobe's -lm) on the real cross-framework LLM dump pair (PyTorch golden, MindSpore
target): the pairs it adds are the ones msprobe's own layer mapping makes with the same YAML."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from studio.core.errors import UserError
from studio.tools.accuracy.msprobe_compare import compare_msprobe
from studio.tools.accuracy.msprobe_layers import _rename, read_layer_mapping

PAIR = "real/msprobe/cross_framework_llm_dump/dump_file"
MAPPING = """# MindSpore (target) submodule names: PyTorch (golden) names
Cell:
  network_with_loss: module
ParallelTransformerLayer:
  attention: 'self_attention'
"""


@pytest.fixture
def llm(ascend_fixtures, tmp_path):
    root = ascend_fixtures / PAIR
    mapping = tmp_path / "layer_mapping.yaml"
    mapping.write_text(MAPPING)
    return root / "pytorch_data" / "dump.json", root / "mindspore_data" / "dump.json", mapping


def test_layer_mapping_pairs_what_msprobes_own_layer_mapping_pairs(llm):
    golden, target, mapping = llm
    before = compare_msprobe(golden, target)
    after = compare_msprobe(golden, target, layer_mapping=mapping)
    named = {t.name: g.name for g, t in before.pairs}
    mine = {t.name: g.name for g, t in after.pairs}
    assert len(named) == 3 and len(mine) == 7
    assert all(mine[t] == g for t, g in named.items())  # pairs by name are kept
    layout = pytest.importorskip("msprobe.core.compare.layer_mapping.layer_mapping")
    theirs = layout.generate_api_mapping_by_layer_mapping(str(target), str(golden), str(mapping))
    added = {t: g for t, g in theirs.items() if g != "N/A" and t not in named}
    assert added and {t: mine.get(t) for t in added} == added
    assert set(mine) - set(named) == set(added)
    # the module calls are compared, argument by argument, once paired
    attention = next(r for r in after.rows if r.target_api.endswith("attention.ParallelAttention.forward.0"))
    assert attention.golden_api.endswith("self_attention.ParallelAttention.forward.0")


def test_cli_layer_mapping(llm):
    golden, target, mapping = llm
    counts = []
    for extra in ([], ["--layer-mapping", str(mapping)]):
        done = subprocess.run([sys.executable, "-m", "studio", "compare", str(golden), str(target), "--json", *extra],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        counts.append(json.loads(done.stdout)["apis_matched"])
    assert counts == [3, 7]


def test_layer_mapping_file_layouts(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MAPPING + "Block:\n  a.b.c: x.y  # three levels become two\n  a: z\n")
    mapping = read_layer_mapping(path)
    assert mapping == {"TopLayer": {"network_with_loss": "module"}, "ParallelTransformerLayer":
                       {"attention": "self_attention"}, "Block": {"a.b.c": "x.y", "a": "z"}}
    (tmp_path / "m.json").write_text(json.dumps(mapping))
    assert read_layer_mapping(tmp_path / "m.json") == mapping
    classes = {("net",): "Block", ("net", "a"): "Inner"}
    # the longest key first; below a renamed level the rules of its type (else its name) apply
    assert _rename(("net", "a", "b", "c", "d"), classes, {"TopLayer": {}, "Block": mapping["Block"]}) == \
        ("net", "x", "y", "d")
    assert _rename(("net", "a", "q"), classes, {"Block": mapping["Block"], "Inner": {"q": "r"}}) == ("net", "z", "r")
    for bad, where in (("  a: b\n", "line 1"), ("Type: x\n", "line 1"), ("T:\n  a:\n", "line 2"), ("T:\n  oops\n", "line 2")):
        path.write_text(bad)
        with pytest.raises(UserError) as caught:
            read_layer_mapping(path)
        assert caught.value.where.endswith(where)
