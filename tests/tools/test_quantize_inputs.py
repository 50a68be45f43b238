"""``studio quantize``'s inputs and Ascend files: pictures through the infer preprocessing, .npz
samples, bad calibration data refused with nothing written, AMCT's files matching the search."""

from __future__ import annotations

import os

import cv2
import numpy as np
import pytest

from quantize_helpers import chain_model, samples
from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.ops import quantize as op


def _request(model, out, calib, **kw) -> op.Request:
    return op.Request(model, out, calib, budget=0.2, timing=False, **kw)


def _image_model(path):
    """A 1x3x8x8 picture input, a 1x1 Conv: one quantisable layer."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.full((2, 3, 1, 1), 0.5, np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))


def test_pictures_are_preprocessed_as_infer_does(tmp_path):
    model = tmp_path / "conv.onnx"
    _image_model(model)
    folder = tmp_path / "pictures"
    folder.mkdir()
    rng = np.random.default_rng(0)
    pictures = [rng.integers(0, 256, (8, 8, 3), dtype=np.uint8) for _ in range(3)]
    for k, picture in enumerate(pictures):
        cv2.imwrite(str(folder / f"p{k}.png"), picture)
    loaded = op.load_samples(_request(model, tmp_path / "q.onnx", folder, preset="unit", resize="stretch"), folder)
    for feeds, picture in zip(loaded.feeds, pictures):  # RGB, 0..1, NCHW: by hand
        expected = (picture[:, :, ::-1].astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
        np.testing.assert_allclose(feeds["x"], expected, atol=1e-6)


@pytest.mark.parametrize("case", ["empty", "unreadable", "not-a-folder", "npz-wrong-name", "npz-corrupt"])
def test_bad_calibration_data_is_refused_and_nothing_written(tmp_path, case):
    model = tmp_path / "conv.onnx"
    _image_model(model)
    calib = tmp_path / "calib"
    expected = {"empty": "holds no pictures", "unreadable": "could be read", "not-a-folder": "not found",
                "npz-wrong-name": "no array for input", "npz-corrupt": "Cannot read the calibration arrays"}[case]
    if case == "empty":
        calib.mkdir()
    elif case == "unreadable":
        calib.mkdir()
        (calib / "a.png").write_bytes(b"not a picture")
        (calib / "b.jpg").write_bytes(b"")
    elif case == "npz-wrong-name":
        calib = tmp_path / "calib.npz"
        np.savez(calib, image=np.zeros((2, 3, 8, 8), np.float32))
    elif case == "npz-corrupt":
        calib = tmp_path / "calib.npz"
        calib.write_bytes(b"PK\x03\x04 truncated")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(UserError, match=expected):
        run_job(op.run(_request(model, tmp_path / "q.onnx", calib)))
    assert sorted(os.listdir(tmp_path)) == before


def test_ascend_files_skip_the_rollback_set_and_carry_the_samples(tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=1)
    calib = samples(6, 1)
    np.savez(tmp_path / "calib.npz", x=np.concatenate([s["x"] for s in calib]))
    result = run_job(op.run(_request(model, tmp_path / "q.onnx", tmp_path / "calib.npz", min_cosine=0.99,
                                     ascend=tmp_path / "ascend", soc="Ascend910B1")))
    folder = tmp_path / "ascend"
    config = (folder / "amct.cfg").read_text()
    assert [line.split('"')[1] for line in config.splitlines() if line.startswith("skip_layers")] == result.fallback
    assert "batch_num: 6" in config and result.fallback == ["mm1"]
    for k, sample in enumerate(calib):
        np.testing.assert_array_equal(np.fromfile(folder / "data" / "x" / f"{k:05d}.bin", np.float32).reshape(1, 16),
                                      sample["x"])
    script = (folder / "commands.sh").read_text()
    assert "amct_onnx calibration --model=chain.onnx" in script and "--calibration_config=amct.cfg" in script
    assert "atc --model=amct_out/chain_deploy_model.onnx --framework=5" in script
    assert "--soc_version=Ascend910B1" in script and "not given" not in script
    assert (folder / "chain.onnx").read_bytes() == model.read_bytes()
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_the_request_survives_its_command_line(tmp_path):
    import dataclasses

    from studio.cli import command_parser

    request = op.Request(tmp_path / "m.onnx", tmp_path / "o.onnx", tmp_path / "pics", tmp_path / "held", "entropy",
                         True, "qoperator", ("Conv", "Add"), ("n1", "n 2"), None, 2.5, tmp_path / "l.csv",
                         tmp_path / "names.txt", "symmetric", "stretch", (48, 192), True, "NHWC",
                         (1.0, 2.0, 3.0), (4.0, 5.0, 6.0), tmp_path / "r.json", 0.5, False, tmp_path / "asc",
                         "Ascend910B1", "segment", head="yolox", conf=0.3, iou=0.6, search="ranked")
    defaults = op.Request(tmp_path / "m.onnx", tmp_path / "o.onnx", tmp_path / "pics")
    changed = [f.name for f in dataclasses.fields(op.Request) if getattr(request, f.name) != getattr(defaults, f.name)]
    # all but model, out, calib and the other targets (min_cosine, max_map/dice/iou_drop)
    assert len(changed) == len(dataclasses.fields(op.Request)) - 7
    back = op.Request.from_args(command_parser("quantize").parse_args(request.to_argv()))
    assert back == request
    for target in ({"min_cosine": 0.875}, {"max_map_drop": 1.5}, {"max_dice_drop": 2.0}, {"max_iou_drop": 0.25}):
        other = dataclasses.replace(request, max_top1_drop=None, **target)
        assert op.Request.from_args(command_parser("quantize").parse_args(other.to_argv())) == other


def test_the_ascend_commands_run_on_a_toolkit_and_bring_the_om_back(tmp_path):
    from convert_remote_helpers import make_quantize_toolkit
    from studio.targets import LocalTarget

    fake_om = tmp_path / "fake.om"
    fake_om.write_bytes(b"om bytes")
    toolkit = make_quantize_toolkit(tmp_path / "toolkit", fake_om)
    model = tmp_path / "chain.onnx"
    chain_model(model, outlier_at=1)
    np.savez(tmp_path / "calib.npz", x=np.concatenate([s["x"] for s in samples(6, 1)]))
    request = _request(model, tmp_path / "q.onnx", tmp_path / "calib.npz", min_cosine=0.99,
                       ascend=tmp_path / "ascend", soc="Ascend310P3")
    target = LocalTarget(toolkit=str(toolkit), work_root=str(tmp_path / "work"))
    result = run_job(op.run(request, target=target))
    folder = tmp_path / "ascend"
    assert (folder / "chain_int8.om").read_bytes() == b"om bytes"
    assert (folder / "amct_out" / "chain_deploy_model.onnx").read_bytes() == model.read_bytes()
    log = (folder / "quantize_ascend.log").read_text()
    assert "AMCT: calibration of chain.onnx on 6 batch(es)" in log and "ATC run success" in log
    assert "AMCT: skip layer mm1 (kept in float)" in log and result.fallback == ["mm1"]
    atc_args = (toolkit / "last_args").read_text()
    assert "--model=amct_out/chain_deploy_model.onnx" in atc_args and "--soc_version=Ascend310P3" in atc_args
    assert result.ascend["om_local"] == str(folder / "chain_int8.om")


def test_host_without_the_ascend_folder_is_refused(tmp_path):
    model = tmp_path / "chain.onnx"
    chain_model(model)
    with pytest.raises(UserError, match="need the folder --ascend writes"):
        run_job(op.run(_request(model, tmp_path / "q.onnx", tmp_path / "c.npz"), "npu-box"))
