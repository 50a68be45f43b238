"""acl.json with a remote dump_path, dump_list from the .om, and the newest dump tree in a listing."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from accuracy_helpers import write_npu_dump

from studio.core.errors import UserError
from studio.tools.accuracy.acl_config import build_acl_json, om_dump_entry, read_acl_config, write_acl_json
from studio.tools.accuracy.dump_tree import find_newest_dump


def test_acl_json_round_trip(tmp_path):
    doc = build_acl_json("/home/HwHiAiUser/dump out", [("colorization", ["conv1_1", "conv1_2"])], mode="all",
                         op_switch="on")
    path = write_acl_json(tmp_path / "acl.json", doc)
    assert json.loads(path.read_text())["dump"]["dump_list"] == [{"model_name": "colorization",
                                                                  "layer": ["conv1_1", "conv1_2"]}]
    config = read_acl_config(path)
    assert config.dump_path == "/home/HwHiAiUser/dump out" and config.mode == "all" and config.op_switch == "on"
    assert config.layers == {"colorization": ["conv1_1", "conv1_2"]}
    assert build_acl_json("/d", [("m", [])])["dump"]["dump_list"] == [{"model_name": "m"}]  # no layer = all ops


@pytest.mark.parametrize("kwargs, match", [({"mode": "both"}, "dump_mode"), ({"op_switch": "yes"}, "dump_op_switch"),
                                           ({"data": "npy"}, "dump_data")])
def test_acl_json_rejects_bad_values(kwargs, match):
    with pytest.raises(UserError, match=match):
        build_acl_json("/d", [("m", [])], **kwargs)


def test_dump_entry_from_a_real_om(ascend_fixtures):
    from studio.tools.graph.om_reader import read_om

    path = ascend_fixtures / "om" / "root_model.om"
    model = read_om(path)
    assert om_dump_entry(model, path.name) == ("root_model", [])
    assert om_dump_entry(model, path.name, ["fused_op1"]) == ("root_model", ["fused_op1"])
    with pytest.raises(UserError) as err:
        om_dump_entry(model, path.name, ["fused_op"])
    assert "fused_op -> fused_op1?" in str(err.value)


def _listing(root):
    return [os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files]


def test_newest_dump_tree_from_real_dump_files(tmp_path):
    root = tmp_path / "dump"
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    for stamp, index in (("20231123101010", "0"), ("20231123121212", "0"), ("20231123121212", "1")):
        folder = root / stamp / "0" / "colorization" / "1" / index
        write_npu_dump(folder, "Conv2D", "conv1_1", [(x, 2)], [(x * 2, 2)])
        write_npu_dump(folder, "Relu", "relu1_1", [(x, 2)], [(x, 2)], task=2)
    (root / "20231123121212" / "0" / "readme.txt").write_text("not a dump")  # wrong depth: ignored
    tree = find_newest_dump(_listing(root), str(root))
    assert (tree.timestamp, tree.device, tree.model, tree.model_id, tree.index) == ("20231123121212", "0",
                                                                                   "colorization", "1", "1")
    assert tree.others == 2 and len(tree.files) == 2 and os.path.isdir(tree.path)
    from studio.tools.accuracy import npu_dump

    from pathlib import Path

    dumped = npu_dump.read_header(Path(tree.path) / tree.files[0])
    assert dumped.op_type in ("Conv2D", "Relu")
    with pytest.raises(UserError) as err:
        find_newest_dump(_listing(root), str(root), model="resnet")
    assert "colorization" in str(err.value)
    with pytest.raises(UserError, match="No NPU dump files"):
        find_newest_dump([], "/d")
