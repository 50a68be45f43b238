"""File routing: formats are told apart by content, on the real Ascend files and on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from refusal_helpers import refusal

from studio.core import formats
from studio.core.errors import UserError

REAL_FILES = {
    "om/root_model.om": ("om", formats.GRAPH),
    "om/flow_model.om": ("om", formats.GRAPH),
    "om/dynamic_and_static_graph_without_unfold.om": ("om", formats.GRAPH),
    "msprof/trace_view_tiny.json": ("chrome_trace", formats.PROFILER),
    "msprof/op_summary_legacy_header.csv": ("profiling_csv", formats.PROFILER),
    "msprof/msprof_0.db": ("profiling_db", formats.PROFILER),
    "pytorch_npu/trace_view.json": ("chrome_trace", formats.PROFILER),
    "pytorch_npu/kernel_details.csv": ("profiling_csv", formats.PROFILER),
    "pytorch_npu/op_statistic.csv": ("profiling_csv", formats.PROFILER),
    "pytorch_npu/api_statistic.csv": ("profiling_csv", formats.PROFILER),
    "pytorch_npu/step_trace_time.csv": ("profiling_csv", formats.PROFILER),
    "cfg/aipp_rgb_static.cfg": ("aipp_cfg", formats.CONVERT),
    "cfg/aipp_yuv420sp_csc.cfg": ("aipp_cfg", formats.CONVERT),
    "cfg/acl_dump.json": ("acl_json", formats.ACCURACY),
    "pytorch_npu": ("pytorch_npu_dir", formats.PROFILER),
}


@pytest.mark.parametrize("relative", sorted(REAL_FILES))
def test_real_ascend_files_are_routed(ascend_fixtures, relative):
    detected = formats.detect(ascend_fixtures / relative)
    assert (detected.format.id, detected.format.panel) == REAL_FILES[relative]


def test_fake_om_is_refused_with_reason_and_fix(ascend_fixtures):
    with pytest.raises(UserError) as info:
        formats.detect(ascend_fixtures / "om" / "not_an_om.om")
    error = info.value
    assert "OM model" in error.what and "this is fake om" in error.what
    assert error.where.endswith("not_an_om.om")
    assert "IMOD" in error.fix


def test_onnx_is_detected_by_content_not_extension(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    target = tmp_path / "model.bin"  # deliberately not .onnx
    onnx.save(helper.make_model(graph), target)
    assert formats.detect(target).format.id == "onnx"


def test_trace_saved_under_another_extension_is_still_a_trace(tmp_path):
    target = tmp_path / "timeline.txt"
    target.write_text(json.dumps({"traceEvents": [{"name": "a", "ph": "X", "ts": 0, "dur": 1}]}))
    assert formats.detect(target).format.id == "chrome_trace"


def test_npy_and_dump_folder(tmp_path):
    np.save(tmp_path / "conv1.0.1700000000000000.npy", np.zeros(3))
    assert formats.detect(tmp_path / "conv1.0.1700000000000000.npy").format.id == "npy"
    assert formats.detect(tmp_path).format.id == "dump_dir"


def test_npu_dump_file_name_and_header(tmp_path):
    target = tmp_path / "Conv2D.conv1_Conv2D.12.3.1682067845380164"
    header = b"\x0a\x04abcd"
    target.write_bytes(len(header).to_bytes(8, "little") + header + b"\x00" * 16)
    assert formats.detect(target).format.id == "npu_dump"


def test_prof_folder_and_workspace_folder(tmp_path):
    prof = tmp_path / "PROF_000001_20240101000000000_ABCDEFG"
    (prof / "mindstudio_profiler_output").mkdir(parents=True)
    assert formats.detect(prof).format.id == "msprof_dir"
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "studio.toml").write_text("[workspace]\nname = 'x'\n")
    assert formats.detect(tmp_path / "ws").format.panel == formats.WORKSPACE


@pytest.mark.parametrize("content,expected", [
    (b"", "empty"),
    (b"\x00\x01\x02garbage-bytes", "Unknown file format"),
    (b"just some notes\n", "Unknown file format"),
])
def test_bad_input_says_what_and_where(tmp_path, content, expected):
    target = tmp_path / "mystery.dat"
    error = refusal(formats.detect, target, content)
    assert expected in error.what
    assert str(target) == error.where
    assert error.fix


def test_missing_file_and_unknown_folder(tmp_path):
    with pytest.raises(UserError, match="not found"):
        formats.detect(tmp_path / "nope.onnx")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="Folder is not one Studio can open"):
        formats.detect(tmp_path / "empty")


def test_truncated_onnx_header_is_not_taken_for_onnx(tmp_path):
    target = tmp_path / "broken.onnx"
    target.write_bytes(b"\x08")  # a lone tag byte: nothing more
    with pytest.raises(UserError, match="Not a valid ONNX model"):
        formats.detect(target)


CLUSTER = "real/cluster_pytorch/"
ROUTED_FOLDERS = {  # real multi-rank folders go to the cluster panel; a rank's own folder stays the profiler's
    CLUSTER + "msinsight_st_4rank_mindspeed_qwen3/level2": ("cluster_dir", "cluster"),
    CLUSTER + "msinsight_st_4rank_mindspeed_qwen3": ("cluster_dir", "cluster"),
    CLUSTER + "msinsight_text_2rank_level2/level2": ("cluster_dir", "cluster"),
    CLUSTER + "msinsight_db_2rank_level2/level2": ("cluster_dir", "cluster"),
    CLUSTER + "cluster_analysis_output_16rank_msinsight": ("cluster_dir", "cluster"),
    CLUSTER + "cluster_analysis_output_8rank_msprof_analyze/cluster_analysis_output": ("cluster_dir", "cluster"),
    "real/msprof_prof_legacy/mindinsight_2dev": ("cluster_dir", "cluster"),
    CLUSTER + "msinsight_st_4rank_mindspeed_qwen3/level2/rank_0_ascend_pt": ("pytorch_npu_dir", formats.PROFILER),
    CLUSTER + "msinsight_db_2rank_level2/level2/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT":
        ("pytorch_npu_dir", formats.PROFILER),
    "real/msprof_prof_legacy/mindinsight_2dev/PROF_000001_20230818142704322_COJGGGCANRMICFBC":
        ("msprof_dir", formats.PROFILER),
    "real/memory/msinsight_static_op_mem": ("pytorch_npu_dir", formats.PROFILER),
}


@pytest.mark.parametrize("relative", sorted(ROUTED_FOLDERS))
def test_cluster_folders_are_routed_and_rank_folders_are_not_taken(ascend_fixtures, relative):
    if not (ascend_fixtures / relative).is_dir():
        pytest.skip("real cluster fixtures not present")
    detected = formats.detect(ascend_fixtures / relative)
    assert (detected.format.id, detected.format.panel) == ROUTED_FOLDERS[relative]


def test_one_rank_is_not_a_cluster_and_two_are(tmp_path):
    (tmp_path / "job" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    with pytest.raises(UserError, match="Folder is not one Studio can open"):
        formats.detect(tmp_path / "job")  # one rank: not a cluster (as before)
    (tmp_path / "job" / "rank1_ascend_pt" / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    assert formats.detect(tmp_path / "job").format.id == "cluster_dir"
    prof = tmp_path / "prof" / "PROF_000001_20240101000000000_ABCDEFG"
    for device in ("device_0", "device_1"):
        (prof / device).mkdir(parents=True)
    assert formats.detect(prof).format.id == "msprof_dir"  # the PROF_ folder itself stays the profiler's
    assert formats.detect(tmp_path / "prof").format.id == "cluster_dir"  # two devices under it: two ranks
