"""NPU dump files: round trip through a writer built from the documented layout, layouts, truncation."""

from __future__ import annotations

import numpy as np
import pytest
from accuracy_helpers import write_npu_dump

from studio.core import formats
from studio.core.errors import UserError
from studio.tools.accuracy import npu_dump, npu_layout
from studio.tools.accuracy.dumpset import load_dump


@pytest.fixture
def arrays():
    rng = np.random.default_rng(0)
    return {"in": rng.standard_normal((1, 20, 5, 6)).astype(np.float16),
            "out": rng.standard_normal((1, 20, 5, 6)).astype(np.float32)}


def test_round_trip_with_nc1hwc0_output(tmp_path, arrays):
    path = write_npu_dump(tmp_path, "Conv2D", "conv1/Conv2D", [(arrays["in"], 2)], [(arrays["out"], 3)],
                          original_op="conv1")
    assert formats.detect(path).format.id == "npu_dump"
    dump = npu_dump.read_header(path)
    assert (dump.op_type, dump.op_name, dump.task_id, dump.stream_id) == ("Conv2D", "conv1/Conv2D", 1, 0)
    assert dump.outputs[0].shape == [1, 2, 5, 6, 16]        # device layout, C padded to 32
    assert dump.outputs[0].original_shape == [1, 20, 5, 6]
    np.testing.assert_array_equal(npu_dump.read_tensor(dump, dump.inputs[0]), arrays["in"])
    np.testing.assert_array_equal(npu_dump.read_tensor(dump, dump.outputs[0]), arrays["out"])
    dump_set = load_dump(tmp_path)
    assert dump_set.mode == "npu"
    out = [e for e in dump_set.entries if e.kind == "output"][0]
    assert out.original_ops == ["conv1"] and out.shape == (1, 20, 5, 6)
    np.testing.assert_array_equal(dump_set.load(out), arrays["out"])


@pytest.mark.parametrize("fmt,shape", [(npu_layout.FRACTAL_Z, (20, 18, 3, 3)), (npu_layout.FRACTAL_NZ, (2, 33, 17)),
                                       (npu_layout.NC1HWC0, (2, 3, 4, 5))])
def test_device_layouts_convert_back(fmt, shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    device = npu_layout.from_original(x, fmt)
    back = npu_layout.to_original(device.reshape(-1), list(device.shape), fmt, list(shape))
    np.testing.assert_array_equal(back, x)


def test_convert_writes_npy_and_txt(tmp_path, arrays):
    path = write_npu_dump(tmp_path / "dump", "Add", "add_1", [(arrays["in"], 2)], [(arrays["out"], 2)])
    written = npu_dump.convert(path, tmp_path / "out", txt=True)
    names = sorted(p.name for p in written)
    assert f"{path.name}.output.0.npy" in names and f"{path.name}.input.0.txt" in names
    np.testing.assert_array_equal(np.load(tmp_path / "out" / f"{path.name}.output.0.npy"), arrays["out"])


def test_truncation_is_a_user_error_naming_file_and_offset(tmp_path, arrays):
    path = write_npu_dump(tmp_path / "dump", "Add", "add_1", [(arrays["in"], 2)], [(arrays["out"], 2)])
    data = path.read_bytes()
    header_len = int.from_bytes(data[:8], "little")
    for cut in (4, 8 + header_len // 2, 8 + header_len + 10, len(data) - 1):
        broken = tmp_path / "cut" / path.name
        broken.parent.mkdir(exist_ok=True)
        broken.write_bytes(data[:cut])
        with pytest.raises(UserError) as info:
            dump = npu_dump.read_header(broken)
            for slot in dump.inputs + dump.outputs:
                npu_dump.read_tensor(dump, slot)
        assert "truncated" in info.value.what and "offset" in info.value.where and str(broken) in info.value.where


def test_corrupt_header_is_a_user_error(tmp_path):
    path = tmp_path / "Add.add_1.1.0.1700000000000000"
    path.write_bytes((5).to_bytes(8, "little") + b"\xff\xff\xff\xff\xff" + b"rest")
    with pytest.raises(UserError) as info:
        npu_dump.read_header(path)
    assert "corrupt" in info.value.what


def test_real_acl_dump_config_is_detected(ascend_fixtures):
    from studio.tools.accuracy.acl_config import read_acl_config

    path = ascend_fixtures / "cfg" / "acl_dump.json"
    assert formats.detect(path).format.id == "acl_json"
    config = read_acl_config(path)
    assert config.dump_path == "/home/HwHiAiUser/dump"
    assert config.models == ["colorization"] and config.mode == "all"
    assert "colorization" in config.layout()


def test_nested_npu_dump_tree_is_detected_as_a_dump_folder(tmp_path, arrays):
    leaf = tmp_path / "dump" / "20260101120000" / "0" / "colorization" / "1" / "0"
    write_npu_dump(leaf, "Relu", "relu1", [], [(arrays["out"], 2)])
    assert formats.detect(tmp_path / "dump").format.id == "dump_dir"
    assert load_dump(tmp_path / "dump").entries[0].op_name == "relu1"
