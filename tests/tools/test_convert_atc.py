"""The ATC command for the seed projects, ATC's rules checked before anything runs, and ATC logs."""

from __future__ import annotations

import shlex

import pytest

from studio.core.errors import UserError
from studio.tools.convert.atc_command import build_atc_argv, preview, split_extra_args
from studio.tools.convert.atc_log import parse_atc_output
from studio.tools.convert.options import ConvertOptions


def test_unet_air_with_aipp(ascend_fixtures):
    cfg = ascend_fixtures / "cfg" / "aipp_rgb_static.cfg"
    options = ConvertOptions(model="model/unet_hw960.air", output="model/unet_hw960", soc_version="Ascend310",
                             input_shape="x:1,3,640,640", insert_op_conf=cfg, output_type="FP32",
                             input_format="NCHW")
    argv = build_atc_argv(options)
    assert argv == ["atc", "--model=model/unet_hw960.air", "--framework=1", "--output=model/unet_hw960",
                    "--soc_version=Ascend310", "--input_format=NCHW", "--input_shape=x:1,3,640,640",
                    "--output_type=FP32", f"--insert_op_conf={cfg}"]
    assert shlex.split(preview(argv)) == argv


def test_colorization_caffe_with_op_debug_level_4():
    options = ConvertOptions(model="colorization.prototxt", weight="colorization.caffemodel", output="colorization",
                             soc_version="Ascend310", input_shape="data_l:1,1,224,224", op_debug_level=4, log="info")
    argv = build_atc_argv(options)
    assert argv[:4] == ["atc", "--model=colorization.prototxt", "--framework=0", "--weight=colorization.caffemodel"]
    assert "--op_debug_level=4" in argv and "--log=info" in argv
    assert preview(argv).startswith("atc --model=colorization.prototxt --framework=0")


def test_face_mask_tf_pb_nhwc_with_fusion_switch(tmp_path):
    switch = tmp_path / "fusion_switch.cfg"
    switch.write_text("ConvBatchnormFusionPass:off\n")
    options = ConvertOptions(model="face_mask_detection.pb", output="face_mask", soc_version="Ascend310",
                             input_shape="data_1:1,260,260,3", input_format="NHWC", fusion_switch_file=switch,
                             out_nodes="loc_branch_concat:0;cls_branch_concat:0",
                             extra_args=split_extra_args("--op_select_implmode=high_precision"))
    argv = build_atc_argv(options)
    assert "--framework=3" in argv and "--input_format=NHWC" in argv
    assert f"--fusion_switch_file={switch}" in argv
    assert argv[-1] == "--op_select_implmode=high_precision"
    assert "--input_shape=data_1:1,260,260,3" in argv


def test_dynamic_batch_is_accepted_with_minus_one():
    argv = build_atc_argv(ConvertOptions(model="m.onnx", output="m", soc_version="Ascend310P3",
                                         input_shape="image:-1,3,256,256", dynamic_batch_size="1,2,4,8"))
    assert "--dynamic_batch_size=1,2,4,8" in argv
    # ';' would end a shell command: the preview quotes what needs it, and splits back to the argv.
    two = build_atc_argv(ConvertOptions(model="m.onnx", output="m", soc_version="Ascend310",
                                        input_shape="a:1,3;b:1,4"))
    assert "'--input_shape=a:1,3;b:1,4'" in preview(two) and shlex.split(preview(two)) == two


@pytest.mark.parametrize("changes, needle", [
    ({"model": "net.prototxt"}, "--weight must not be empty"),
    ({"soc_version": None}, "--soc_version is required"),
    ({"soc_version": "Ascend301"}, "Did you mean Ascend310"),
    ({"framework": 3}, "does not match m.onnx"),
    ({"weight": "w.caffemodel"}, "only for Caffe"),
    ({"input_shape": "image:-1,3,8,8"}, "no dynamic option"),
    ({"input_shape": "image:-1,3,8,8", "dynamic_batch_size": "1,2", "dynamic_image_size": "8,8;16,16"},
     "mutually exclusive"),
    ({"input_shape": "image:1,3,8,8", "dynamic_batch_size": "1,2"}, "needs -1 as the batch"),
    ({"input_shape": "image:-1,3,8,8", "dynamic_batch_size": "4"}, "ATC takes 2 to 100"),
    ({"insert_op_conf": "aipp.cfg", "input_format": "ND"}, "cannot be used with AIPP"),
    ({"output_type": "FP8"}, "--output_type is invalid"),
    ({"precision_mode": "fast"}, "--precision_mode is invalid"),
    ({"op_debug_level": 7}, "--op_debug_level is invalid"),
    ({"log": "verbose"}, "--log is invalid"),
    ({"extra_args": ["--soc_version=Ascend910"]}, "set twice"),
    ({"extra_args": ["--op_select_impl=high_precision"]}, "Did you mean --op_select_implmode"),
    ({"extra_args": ["op_select_implmode"]}, "not --option=value"),
    ({"model": "model.tflite"}, "Cannot tell the framework"),
])
def test_impossible_combinations_are_refused_with_the_option_named(changes, needle):
    base = dict(model="m.onnx", output="m", soc_version="Ascend310")
    base.update(changes)
    with pytest.raises(UserError) as err:
        build_atc_argv(ConvertOptions(**base))
    assert needle in str(err.value)


def test_broken_aipp_file_is_checked_before_the_command(tmp_path):
    cfg = tmp_path / "aipp.cfg"
    cfg.write_text("aipp_op {\n  aipp_mode : static\n  input_format : RGB888_U8\n  mean_chn_0 : abc\n}\n")
    with pytest.raises(UserError) as err:
        build_atc_argv(ConvertOptions(model="m.onnx", output="m", soc_version="Ascend310", insert_op_conf=cfg))
    assert err.value.where.endswith("aipp.cfg, line 4")


ATC_OUTPUT = """\
ATC start working now, please wait for a moment.
ATC run failed, Please check the detail log, Try 'atc --help' for more information
E10001: Value [-1] for parameter [--input_shape] is invalid. Reason: maybe you should set input_shape to specify its shape.
        Solution: Try again with a valid argument.
[ERROR] GE(1234,atc.bin):2024-05-01-10:00:00.123.456 [graph_prepare.cc:77]Input data_1 has unknown shape.
W11001: Op [Conv_0] does not hit the high-priority operator information library
E99999: something from the future
"""


def test_atc_log_codes_become_messages_with_fixes():
    messages = parse_atc_output(ATC_OUTPUT)
    assert [m.code for m in messages] == [None, "E10001", None, "W11001", "E99999"]
    e10001 = messages[1]
    assert e10001.line_number == 3 and "Value [-1]" in e10001.text and e10001.fix
    assert messages[2].text.startswith("GE [graph_prepare.cc:77]")
    assert messages[3].level == "warning"
    assert "fix:" in str(e10001)


def test_remote_plan_uploads_inputs_and_names_the_remote_copies(ascend_fixtures, tmp_path):
    from studio.tools.convert.atc_command import remote_plan

    cfg = ascend_fixtures / "cfg" / "aipp_rgb_static.cfg"
    options = ConvertOptions(model=tmp_path / "unet.air", output=tmp_path / "out" / "unet", soc_version="Ascend310",
                             input_shape="x:1,3,640,640", insert_op_conf=cfg)
    argv, uploads, download = remote_plan(options, "/home/user/convert/")
    assert uploads == [(tmp_path / "unet.air", "/home/user/convert/unet.air"),
                       (cfg, "/home/user/convert/aipp_rgb_static.cfg")]
    assert "--model=/home/user/convert/unet.air" in argv
    assert "--insert_op_conf=/home/user/convert/aipp_rgb_static.cfg" in argv
    assert "--output=/home/user/convert/unet" in argv
    assert download == ("/home/user/convert/unet.om", tmp_path / "out" / "unet.om")
