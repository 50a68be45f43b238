"""msprobe module graphs: construct.json as the graph viewer's model, coloured by the comparison.

On the real ResNet dumps (two training steps): the tree is checked against construct.json read
here with json alone, and each node's colour in ``studio compare --graph`` against the worst
verdict of the calls under it, the ancestry walked here from the same json.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from studio.core import formats
from studio.tools.accuracy.msprobe_compare import compare_msprobe
from studio.tools.graph.overlay import BAD, GOOD, MIDDLE, NO_DATA
from studio.tools.graph.reader import read_model
from studio.tools.graph.view import build_view

RESNET = "real/msprobe/quick_start_gpu_dump_resnet/gpu_dump"
COLOUR = {"pass": GOOD, "warning": MIDDLE, "error": BAD}
RANK = {"pass": 0, "warning": 1, "error": 2}


@pytest.fixture(scope="module")
def resnet(ascend_fixtures):
    root = ascend_fixtures / RESNET
    return root / "step0" / "proc2016" / "dump.json", root / "step1" / "proc2016" / "dump.json"


@pytest.mark.parametrize("step", [0, 1])
def test_module_tree_is_construct_json(resnet, step):
    construct = resnet[step].with_name("construct.json")
    parents = json.loads(construct.read_text())
    assert formats.detect(construct).format.id == "msprobe_construct"
    model = read_model(construct)
    graph = model.main
    names = set(parents) | {p for p in parents.values() if p}
    assert {n.name for n in graph.nodes} == names and len(graph.nodes) == len(names)
    src, dst, _ = graph.edges()
    edges = {(graph.nodes[a].name, graph.nodes[b].name) for a, b in zip(src.tolist(), dst.tolist())}
    assert edges == {(p, c) for c, p in parents.items() if p}
    by_name = {n.name: n for n in graph.nodes}
    assert by_name["Module.layer1.0.Bottleneck.forward.0"].type == "Bottleneck"
    assert by_name["Functional.conv2d.0.forward"].type == "Functional.conv2d"
    modules = {n for n in names if n.startswith("Module.")}
    assert model.metadata["modules"] == str(len(modules))
    view = build_view(graph, None, direction="LR")  # the graph panel's layout
    assert len(view.items) == len(names) and len(view.layout.edge_src) == len(edges)


def test_graph_svg_colours_each_node_by_the_worst_verdict_under_it(resnet, tmp_path):
    golden, target = resnet
    out = tmp_path / "modules.svg"
    done = subprocess.run([sys.executable, "-m", "studio", "compare", str(golden), str(target), "--json",
                           "--graph", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["graph"] == str(out)
    svg = out.read_text()
    sides = svg.split('<g transform="translate(')[1:]
    assert len(sides) == 2  # golden, then target
    fills = [dict(re.findall(r'<title>([^<]+)</title>\s*<rect [^>]*fill="(#[0-9a-f]+)"', side)) for side in sides]
    # independently: each target call's worst row verdict, raised to every module above it (json walk)
    parents = json.loads(target.with_name("construct.json").read_text())
    worst: dict[str, str] = {}
    for row in compare_msprobe(golden, target).rows:
        name = row.target_api
        seen = set()
        while name and name not in seen:
            seen.add(name)
            if RANK[row.result] >= RANK.get(worst.get(name, "pass"), 0):
                worst[name] = max(worst.get(name, "pass"), row.result, key=RANK.get)
            name = parents.get(name)
    assert {v for v in worst.values()} == {"pass", "warning", "error"}
    for side, dump in zip(fills, resnet):  # each side's own tree (step 0 also holds the optimizer's calls)
        own = json.loads(dump.with_name("construct.json").read_text())
        assert set(side) == set(own) | {p for p in own.values() if p}
        for name, fill in side.items():
            assert fill == COLOUR[worst[name]] if name in worst else fill == NO_DATA, name
    assert fills[0]["Module.layer4.Sequential.backward.0"] == BAD


def test_graph_of_dumps_without_construct_json_is_refused(tmp_path):
    from msprobe_tensor_helpers import Recorder  # writes an empty construct.json, as msprobe at level L1

    torch = pytest.importorskip("torch")
    paths = []
    for side in ("golden", "target"):
        recorder = Recorder(tmp_path / side, "pytorch")
        recorder.call("Functional.relu", torch.relu, torch.ones(3))
        paths.append(recorder.write("statistics"))
    done = subprocess.run([sys.executable, "-m", "studio", "compare", *map(str, paths), "--graph",
                           str(tmp_path / "g.svg")], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "construct.json" in done.stderr and "level L0 or mix" in done.stderr
    assert not (tmp_path / "g.svg").exists()
