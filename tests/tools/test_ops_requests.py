"""Every operation's Request survives its command line: ``Request.from_args(parse(to_argv()))``
gives the request back, field by field (each field set to a value other than its default), and
the command a host runs is the same command line with the files named as uploaded."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import pytest

from studio.cli import command_parser
from studio.ops import bench, convert, cross_check, dump, fp16_check, msprof, npu_dump, profile
from studio.ops.engine import EngineOptions, host_argv

ENGINE = EngineOptions("upload", True)


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    from studio.tools.demo.models import build_classifier

    model = tmp_path / "in dir" / "cls.onnx"
    model.parent.mkdir()
    onnx.save(build_classifier(), str(model))
    array = tmp_path / "x.npy"
    np.save(array, np.zeros((1, 3, 224, 224), np.float32))
    other = tmp_path / "y.npy"
    np.save(other, np.zeros((2,), np.int64))
    aipp = tmp_path / "aipp.cfg"
    aipp.write_text("aipp_op {\n  aipp_mode: static\n}\n")
    picture = tmp_path / "cat.png"
    picture.write_bytes(b"\x89PNG")
    switches = tmp_path / "switch.cfg"
    switches.write_text("{}")
    return {"model": model, "x": array, "y": other, "aipp": aipp, "picture": picture, "switches": switches,
            "out": tmp_path / "out" / "result", "onnx_out": tmp_path / "out" / "conv.onnx"}


def _requests(f: dict[str, Path]) -> list:
    from studio.tools.convert.options import ConvertOptions

    inputs, shapes = {"image": f["x"], "ids": f["y"]}, {"image": [1, 3, 224, 224], "mask": [2, 5]}
    options = ConvertOptions(
        model=f["model"], output=f["onnx_out"], input_shape="image:1,3,224,224", output_type="FP16",
        insert_op_conf=f["aipp"], fusion_switch_file=f["switches"], out_nodes="logits", keep_fp32_ops=["Softmax", "n1"],
        keep_io_types=False, fusions={"ConvBnFusion": False, "ConstantFolding": True}, validate=True,
        validate_image=f["picture"], validate_inputs={"image": f["x"]}, atol=0.125, rtol=0.0625,
        thresholds={"cosine": 0.995, "mean_rel_err": 0.5},
        report=f["onnx_out"].with_name("conv.rep.json"), stamp_source="/a/b.onnx", stamp_report="/a/b.json")
    return [
        profile.Request(f["model"], f["out"], inputs, shapes, 5, ["CUDAExecutionProvider", "X"], ENGINE, 7, 2),
        dump.Request(f["model"], f["out"], inputs, shapes, 9, ["CUDAExecutionProvider"], ENGINE, True),
        bench.Request(f["model"], f["out"], inputs, shapes, 3, ["CUDAExecutionProvider"], ENGINE, 11, 4),
        convert.Request(options, ["CUDAExecutionProvider"], ENGINE),
        fp16_check.Request(f["model"], f["out"], inputs, shapes, 6, ["CUDAExecutionProvider"], ENGINE,
                           {"cosine": 0.875, "rel_euclidean": 0.1}),
        cross_check.Request(f["model"], f["out"], inputs, shapes, 8, ["CUDAExecutionProvider"], ENGINE),
        msprof.Request(f["out"], "app", f["out"].parent, [], ["ai-core=on", "task-time=l1"], "/data/prof"),
        msprof.Request(f["out"], None, None, ["./main", "--flag", "x y"], ["aic-metrics=Memory"]),
        npu_dump.Request(f["out"], "app", Path("m.om"), f["out"].parent, ["conv1", "fc"], "all", "on",
                         [f"image={f['x']}", str(f["y"])], f["model"]),
    ]


def _parse(request, argv: list[str]):
    words = list(request.COMMAND)
    host = ["--host", "h"] if isinstance(request, (cross_check.Request, msprof.Request, npu_dump.Request)) else []
    args = command_parser(words[0]).parse_args([*words[1:], *host, *argv])
    return type(request).from_args(args)


def _fields(request) -> dict:
    return {f.name: getattr(request, f.name) for f in dataclasses.fields(request)}


def _defaults(request) -> dict:
    out = {}
    for f in dataclasses.fields(request):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def test_every_request_survives_its_command_line(files):
    for request in _requests(files):
        again = _parse(request, request.to_argv())
        assert again == request, type(request).__module__
        # Every field was set to something else than its default, so none can be dropped silently.
        defaults = _defaults(request)
        for name, value in _fields(request).items():
            if isinstance(request, msprof.Request) and name in (("config", "workspace", "collect") if request.command
                                                                else ("command",)):
                continue  # a configuration or a command: each form is checked in its own request
            assert name not in defaults or value != defaults[name], f"{type(request).__module__}.{name} is default"
        if isinstance(request, convert.Request):
            defaults = _defaults(request.options)
            for name in ("output_type", "insert_op_conf", "fusion_switch_file", "out_nodes", "keep_fp32_ops",
                         "keep_io_types", "fusions", "validate", "validate_image", "validate_inputs", "atol", "rtol",
                         "report", "stamp_source", "stamp_report", "input_shape"):
                assert getattr(request.options, name) != defaults[name], name


def test_the_host_runs_the_same_command_line_with_uploaded_names(files):
    for request in _requests(files):
        if not hasattr(request, "for_host"):
            continue  # composites (their host part is the dump request) and the Ascend-host runs
        argv, paths = host_argv(request)
        assert argv[:len(request.COMMAND)] == list(request.COMMAND) and argv[-1] == "--json"
        remote = argv[len(request.COMMAND):-1]
        # No local path reaches the host, except the converted model's metadata stamps.
        stamps = {request.options.stamp_source, request.options.stamp_report} if isinstance(request, convert.Request) \
            else set()
        assert not [a for a in remote if str(files["model"].parent.parent) in a and a not in stamps]
        assert set(paths.uploads) >= {"in/cls.onnx"} and all(n.startswith("in/") for n in paths.uploads)
        assert all(n.startswith("out/") for n in paths.outputs)
        # Named back with the local paths, it is this request (the engine options stay here).
        local = {**{k: str(v) for k, v in paths.uploads.items()}, **{k: str(v) for k, v in paths.outputs.items()}}
        back = [local.get(a, _map_value(a, local)) for a in remote]
        expected = dataclasses.replace(request, engine=EngineOptions())
        if isinstance(request, convert.Request):  # the report is named so it comes back next to the model
            expected = dataclasses.replace(expected, options=dataclasses.replace(
                request.options, output=request.options.output.absolute(), report=request.options.report.absolute()))
        elif getattr(request, "output", None) is not None:
            expected = dataclasses.replace(expected, output=Path(request.output).absolute())
        assert _parse(request, back) == expected, type(request).__module__


def _map_value(arg: str, local: dict[str, str]) -> str:
    name, sep, value = arg.partition("=")
    return f"{name}={local[value]}" if sep and value in local else arg


def test_a_dump_on_a_host_uploads_the_input_files_under_neutral_names(files):
    request = dump.Request(files["model"], files["out"], {"image": files["x"]})
    argv, paths = host_argv(request)
    assert argv == ["dump", "in/cls.onnx", "-o", "out/result", "--input", "image=in/inputs/0/x.npy", "--seed", "0",
                    "--json"]
    assert paths.uploads == {"in/cls.onnx": files["model"], "in/inputs/0/x.npy": files["x"]}
    assert paths.outputs == {"out/result": files["out"].absolute()} and paths.dest == files["out"].parent.absolute()
