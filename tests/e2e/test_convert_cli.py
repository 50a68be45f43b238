"""``studio convert`` as a user runs it: local FP16 + validation, the ATC command, clear errors."""

from __future__ import annotations

import json

import onnx
import pytest

from studio.tools.demo.models import build_unet
from test_cli import run_studio


@pytest.fixture(scope="module")
def unet(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "unet.onnx"
    onnx.save(build_unet(), path)
    return path


def test_local_fp16_with_validation_and_json_report(unet, tmp_path, studio_home):
    out = tmp_path / "unet_fp16.onnx"
    result = run_studio("convert", str(unet), "-o", str(out), "--output-type", "FP16", "--validate", "--json",
                        "--atol", "0.1", home=studio_home)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["validation"]["passed"] and report["validation"]["outputs"][0]["cosine"] >= 0.999
    assert report["node_mapping"]["encoder1/conv1/conv"] == ["encoder1/conv1/conv", "encoder1/conv1/bn"]
    assert json.loads((tmp_path / "unet_fp16.report.json").read_text())["output"] == str(out)


def test_print_atc_command(unet, studio_home, ascend_fixtures):
    cfg = ascend_fixtures / "cfg" / "aipp_rgb_static.cfg"
    result = run_studio("convert", str(unet), "--atc", "--soc-version", "Ascend310", "--insert-op-conf", str(cfg),
                        "--input-shape", "image:1,3,640,640", "--print-command", home=studio_home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"atc --model={unet} --framework=5 --output={unet.with_suffix('')} "
                                    "--soc_version=Ascend310")


@pytest.mark.parametrize("args, needle", [
    (["--atc", "--soc-version", "Ascend999x", "--print-command"], "Allowed:"),
    (["-o", "OUT", "--output-type", "INT4"], "FP32 or FP16"),
])
def test_bad_option_values_exit_2_without_traceback(unet, tmp_path, studio_home, args, needle):
    args = [a.replace("OUT", str(tmp_path / "o.onnx")) for a in args]
    result = run_studio("convert", str(unet), *args, home=studio_home)
    assert result.returncode == 2
    assert needle in result.stderr and "Traceback" not in result.stderr


def test_not_onnx_and_broken_aipp_exit_2(tmp_path, studio_home, unet):
    bogus = tmp_path / "bogus.onnx"
    bogus.write_text("hello")
    result = run_studio("convert", str(bogus), "-o", str(tmp_path / "o.onnx"), home=studio_home)
    assert result.returncode == 2 and "Not an ONNX model" in result.stderr
    cfg = tmp_path / "bad.cfg"
    cfg.write_text("aipp_op {\n aipp_mode : static\n input_format : RGB888_U8\n src_image_size_w : wide\n}\n")
    result = run_studio("convert", str(unet), "-o", str(tmp_path / "o.onnx"), "--insert-op-conf", str(cfg),
                        home=studio_home)
    assert result.returncode == 2 and "bad.cfg, line 4" in result.stderr and "Traceback" not in result.stderr


def test_atc_log_command(tmp_path, studio_home):
    log = tmp_path / "atc.log"
    log.write_text("ATC run failed, Please check the detail log\nE10008: --weight must not be empty\n")
    result = run_studio("atc-log", str(log), home=studio_home)
    assert result.returncode == 1
    assert "E10008" in result.stdout and "caffemodel" in result.stdout


def test_pass_switches_on_the_command_line(unet, tmp_path, studio_home):
    """`--pass NAME=off` keeps that rewrite out (the wizard's pass list, as a command line)."""
    out = tmp_path / "kept_bn.onnx"
    result = run_studio("convert", str(unet), "-o", str(out), "--pass", "ConvBnFusion=off", "--json", home=studio_home)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["passes"]["ConvBnFusion"] is False
    ops = [n.op_type for n in onnx.load(out).graph.node]
    original = [n.op_type for n in build_unet().graph.node]
    assert ops.count("BatchNormalization") == original.count("BatchNormalization") > 0
    assert not any(f["pass"] == "ConvBnFusion" for f in report["fusions"])
    folded = run_studio("convert", str(unet), "-o", str(tmp_path / "folded.onnx"), "--json", home=studio_home)
    assert json.loads(folded.stdout)["passes"]["ConvBnFusion"] is True
    assert [n.op_type for n in onnx.load(tmp_path / "folded.onnx").graph.node].count("BatchNormalization") == 0


@pytest.mark.parametrize(("args", "needle"), [
    (["--pass", "ConvBnFusion"], "is not NAME=on or NAME=off"),
    (["--pass", "NoSuchPass=off"], "Unknown pass 'NoSuchPass'"),
    (["--pass", "ConvBnFusion=off", "--atc", "--soc-version", "Ascend310", "--print-command"], "--fusion-switch-file"),
])
def test_bad_pass_switches_are_refused(unet, tmp_path, studio_home, args, needle):
    result = run_studio("convert", str(unet), "-o", str(tmp_path / "x.onnx"), *args, home=studio_home)
    assert result.returncode != 0 and needle in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_the_wizard_s_pass_list_round_trips_through_the_command_line(tmp_path):
    from studio.commands.convert import options_from_args
    from studio.tools.convert.options import ConvertOptions

    options = ConvertOptions(model=tmp_path / "m.onnx", output=tmp_path / "o.onnx",
                             fusions={"ConvBnFusion": False, "ConstantFolding": True}, validate=True)
    argv = options.cli_argv()
    assert argv[argv.index("--pass") + 1] == "ConvBnFusion=off" and argv.count("--pass") == 1
    import argparse

    from studio.commands import convert

    parser = argparse.ArgumentParser()
    convert.add_arguments(parser)
    again = options_from_args(parser.parse_args(argv[2:]))
    assert again.fusions == {"ConvBnFusion": False} and again.validate
