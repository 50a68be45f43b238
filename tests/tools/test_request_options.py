"""Every Request whose options are declared as field metadata (:mod:`studio.core.options`) is found
by walking ``studio.ops``, given a value other than its default in every field, and must survive
its command line both ways: request -> argv -> parsed arguments -> request is the same request,
and its argv again is the same argv. A Request that still writes its own ``to_argv`` must be named
below, so none escapes the check by being new."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path

import numpy as np
import onnx
import pytest

import studio.ops
from studio.cli import command_parser
from studio.core import options
from studio.core.options import declared, option, restate

# Requests with a hand-written to_argv/from_args (test_ops_requests.py covers them one by one).
HAND_WRITTEN = {"studio.ops.cluster.Request"}  # cluster: the host's half only, no from_args


def _request_classes() -> dict[str, type]:
    """Every request of a ``studio.ops`` module that makes a ``studio`` command line (``COMMAND`` and
    ``to_argv``; ModelRun and EngineOptions are parts of requests, not requests)."""
    found = {}
    for info in pkgutil.iter_modules(studio.ops.__path__):
        module = importlib.import_module(f"studio.ops.{info.name}")
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            ours = cls.__module__ == module.__name__
            if ours and hasattr(cls, "COMMAND") and callable(getattr(cls, "to_argv", None)):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def _declared_requests() -> list[type]:
    return [cls for cls in _request_classes().values() if declared(cls)]


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    from studio.tools.demo.models import build_classifier

    model = tmp_path / "in dir" / "cls.onnx"
    model.parent.mkdir()
    onnx.save(build_classifier(), str(model))
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 224, 224), np.float32))
    np.save(tmp_path / "y.npy", np.zeros((2,), np.int64))
    return {"model": model, "x": tmp_path / "x.npy", "y": tmp_path / "y.npy", "out": tmp_path / "out" / "result"}


def _named_samples(files: dict[str, Path]) -> dict:
    """Values for the fields no generic rule can make up (files, structured values)."""
    return {"model": files["model"], "output": files["out"], "inputs": {"image": files["x"], "ids": files["y"]},
            "shapes": {"image": [1, 3, 224, 224], "mask": [2, 5]}, "providers": ["CUDAExecutionProvider", "X"],
            "thresholds": {"cosine": 0.875, "rel_euclidean": 0.1},
            # quantize's: a file or folder each, words with spaces and commas' neighbours
            "calib": files["model"].parent, "evaluate": files["x"], "ranges": files["out"] / "r 1.json",
            "ascend": files["out"] / "asc", "soc": "Ascend910B1", "op_types": ("Conv", "Add"),
            "exclude": ("n1", "n 2"),
            # the Ascend-host runs (msprof, NPU dump): a configuration or a command, files named there
            "config": "app", "workspace": files["model"].parent, "command": ["./main", "--flag", "x y"],
            "msprof_options": ["ai-core=on", "task-time=l1"], "collect": "/data/prof", "layers": ["conv1", "fc"],
            "npy": [f"image={files['x']}", str(files["y"])], "reference": files["model"],
            # a model over pictures (and quantize's calibration pictures): HxW, R,G,B
            "images": files["x"].parent, "out": files["out"].with_suffix(".onnx"), "labels": files["x"],
            "truth": files["y"], "size": (48, 64), "mean": (123.675, 116.28, 103.53), "std": (58.395, 57.12, 57.375),
            # a conversion: ATC's options and Studio's local ones
            "weight": files["y"], "soc_version": "Ascend310P3", "input_format": "NCHW",
            "input_shape": ["image=1,3,224,224", "model_1/conv/BiasAdd;model_1/conv/Conv2D:0=1,8"],
            "output_type": "FP16", "insert_op_conf": files["x"], "fusion_switch_file": files["y"], "log": "info",
            "precision_mode": "force_fp16", "out_nodes": "logits:0", "dynamic_batch_size": "1,2,4",
            "dynamic_image_size": "224,224;448,448", "dynamic_dims": "1,2;3,4",
            "extra_args": ["--op_select_implmode=high_precision", "--a", "b c"], "keep_fp32_ops": ["Softmax", "n1"],
            "fusions": {"ConvBnFusion": False, "ConstantFolding": True}, "validate": True,
            "validate_image": files["x"], "validate_inputs": {"image": files["x"]}, "report": files["out"],
            "stamp_source": "/a/b.onnx", "stamp_report": "/a/b.json",
            # an original model against its converted one
            "converted": files["model"].with_name("cls_fp16.onnx")}


def _sample(cls: type, field: dataclasses.Field, meta, named: dict):
    """A value of ``field`` other than its default."""
    if field.name in named:
        return named[field.name]
    if meta.nested is not None:
        return meta.nested(**{f.name: _sample(meta.nested, f, m, named) for f, m in declared(meta.nested)})
    if meta.arg.get("action") in ("store_true", "store_false"):
        return not field.default
    if meta.arg.get("choices"):
        return next(c for c in meta.arg["choices"] if c != field.default)
    kind = meta.arg.get("type")
    if kind in (int, float):
        return (field.default or 0) + (7 if kind is int else 0.375)
    raise AssertionError(f"{cls.__module__}.{cls.__qualname__}.{field.name}: no sample value; add one to "
                         "_named_samples")


def _default(field: dataclasses.Field):
    return field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default


def _parser_for(cls: type) -> tuple[argparse.ArgumentParser, list[str], argparse.ArgumentParser]:
    """The command's parser, the words before the request's own arguments, and the (sub)parser
    that reads them."""
    parser = command_parser(cls.COMMAND[0])
    for word in cls.COMMAND[1:]:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return command_parser(cls.COMMAND[0]), list(cls.COMMAND[1:]), parser


def _required_others(parser: argparse.ArgumentParser, cls: type) -> list[str]:
    """Values for the command's own required options (cross-check's --host)."""
    own = {flag for _f, meta in declared(cls) for flag in meta.flags}
    return [word for action in parser._actions if action.required and action.option_strings
            and not own & set(action.option_strings) for word in (action.option_strings[0], "h")]


def test_every_request_of_the_ops_layer_is_declared_or_named_here():
    names = set(_request_classes())
    assert names - HAND_WRITTEN == \
        {f"{cls.__module__}.{cls.__qualname__}" for cls in _declared_requests()}
    # The operations that run an ONNX model here or on a host are all declared.
    assert {"studio.ops.dump.Request", "studio.ops.profile.Request", "studio.ops.bench.Request",
            "studio.ops.cross_check.Request", "studio.ops.fp16_check.Request", "studio.ops.msprof.Request",
            "studio.ops.npu_dump.Request", "studio.ops.infer.Request", "studio.ops.convert.Request",
            "studio.ops.compare_models.Request"} <= names - HAND_WRITTEN
    assert HAND_WRITTEN <= names, "a hand-written Request was declared or removed: drop it from HAND_WRITTEN"


def _one_of_each_exclusive_group(cls: type, values: dict) -> list[dict]:
    """``values`` once per member of each mutually exclusive group, the other members at their
    defaults (a command line may hold one of them only); ``[values]`` when there is no group."""
    groups: dict[str, list[str]] = {}
    for field, meta in declared(cls):
        if meta.exclusive:
            groups.setdefault(meta.exclusive, []).append(field.name)
    members = [name for names in groups.values() for name in names]
    if not members:
        return [values]
    defaults = {name: _default(cls.__dataclass_fields__[name]) for name in members}
    return [{**values, **defaults, name: values[name]} for name in members]


def test_every_declared_request_survives_its_command_line_both_ways(files):
    named = _named_samples(files)
    for cls in _declared_requests():
        values = {f.name: _sample(cls, f, meta, named) for f, meta in declared(cls)}
        for name, value in values.items():
            field = cls.__dataclass_fields__[name]
            assert value != _default(field), f"{cls.__module__}.{name}: the sample is the default"
        for each in _one_of_each_exclusive_group(cls, values):
            request = cls(**each)
            argv = request.to_argv()
            top, words, parser = _parser_for(cls)
            args = top.parse_args([*words, *_required_others(parser, cls), *argv])
            again = cls.from_args(args)
            assert again == request, cls.__module__
            assert again.to_argv() == argv, cls.__module__


def test_a_restated_option_keeps_its_flag_conversion_and_host_rule():
    @dataclasses.dataclass
    class Base:
        size: int = option("--size", default=2, type=int, metavar="N", help="how many", host=None)

    @dataclasses.dataclass
    class Other(Base):
        size: int = restate(Base, "size", help="how many, said otherwise", required=True)

    parser = argparse.ArgumentParser()
    options.add_arguments(parser, Other)
    action = next(a for a in parser._actions if a.dest == "size")
    assert (action.option_strings, action.help, action.required, action.default, action.type) == \
        (["--size"], "how many, said otherwise", True, 2, int)
    assert options.from_args(Other, parser.parse_args(["--size", "5"])) == Other(5)
    assert options.option_of(Base.__dataclass_fields__["size"]).help == "how many"


def test_options_are_added_in_the_order_asked_and_each_once():
    @dataclasses.dataclass
    class Request:
        a: int = option("--a", default=0, type=int)
        b: bool = option("--b", default=False, action="store_true")
        c: list = option("--c", default_factory=list, action="append")

    parser = argparse.ArgumentParser()
    options.add_arguments(parser, Request, "c")
    parser.add_argument("--own")
    options.add_arguments(parser, Request)  # the rest, in field order
    assert [a.dest for a in parser._actions][1:] == ["c", "own", "a", "b"]
    request = Request(3, True, ["x", "y z"])
    assert options.to_argv(request) == ["--a", "3", "--b", "--c", "x", "--c", "y z"]
    assert options.from_args(Request, parser.parse_args(options.to_argv(request))) == request


def test_an_exclusive_group_refuses_two_of_its_options_and_a_no_flag_turns_its_field_off():
    @dataclasses.dataclass
    class Request:
        low: float | None = option("--low", default=None, type=float, exclusive="target")
        high: float | None = option("--high", default=None, type=float, exclusive="target")
        timing: bool = option("--no-timing", default=True, action="store_false", dest="timing")

    parser = argparse.ArgumentParser()
    options.add_arguments(parser, Request)
    with pytest.raises(SystemExit):
        parser.parse_args(["--low", "1", "--high", "2"])
    assert options.from_args(Request, parser.parse_args([])) == Request(None, None, True)
    request = Request(None, 2.5, False)
    assert options.to_argv(request) == ["--high", "2.5", "--no-timing"]
    assert options.from_args(Request, parser.parse_args(options.to_argv(request))) == request


def test_the_engine_options_leave_their_defaults_out_of_the_host_command_line():
    from studio.ops.engine import EngineOptions

    assert EngineOptions().to_argv() == []
    assert EngineOptions("upload", True).to_argv() == ["--engine-wheels", "upload", "--engine-system-site-packages"]


def test_older_spellings_are_read_as_the_option_and_left_out_of_help():
    from studio.ops import infer, npu_dump

    dump = command_parser("dump")
    args = dump.parse_args(["--host", "h", "--config", "app", "--model", "m.om", "--input", "x=a.npy",
                            "--npy", "b.npy", "-o", "out"])
    assert npu_dump.Request.from_args(args).npy == ["x=a.npy", "b.npy"]  # --input as everywhere, --npy as before
    assert not [line for line in dump.format_help().splitlines() if line.strip().startswith("--npy")]
    picture = command_parser("infer")
    old = infer.Request.from_args(picture.parse_args(["m.om", "imgs", "-o", "o", "--size", "48x64"]))
    new = infer.Request.from_args(picture.parse_args(["m.om", "imgs", "-o", "o", "--input-shape", "48x64"]))
    assert old == new and old.size == (48, 64)
    assert not [line for line in picture.format_help().splitlines() if line.strip().startswith("--size")]


def test_the_wizard_s_command_preview_reads_back_as_its_conversion(files):
    """The Converter's Command Preview (``ConvertOptions.cli_argv``) is made from the same
    declarations: pasted into a terminal, it is this local conversion, tolerances to the last digit."""
    from studio.ops.convert import options_from_args
    from studio.tools.convert.options import ATC_ONLY, ConvertOptions

    options = ConvertOptions(
        model=files["model"], output=files["out"].with_suffix(".onnx"), input_shape={"image": (1, 3, 224, 224)},
        output_type="FP16", insert_op_conf=files["x"], keep_fp32_ops=["Softmax", "n1"], keep_io_types=False,
        fusions={"ConvBnFusion": False, "ConstantFolding": True}, validate=True, validate_inputs={"image": files["x"]},
        atol=0.123456789, rtol=1 / 3, thresholds={"cosine": 0.875}, report=files["out"].with_suffix(".json"),
        soc_version="Ascend310", extra_args=["--log=debug"])
    argv = options.cli_argv()
    assert argv[:3] == ["studio", "convert", str(files["model"])]
    again = options_from_args(command_parser("convert").parse_args(argv[2:]))
    # ATC's own options are not the local conversion's; a pass that is on by default needs no switch
    assert again == dataclasses.replace(options, **ATC_ONLY, input_shape="image=1,3,224,224",
                                        fusions={"ConvBnFusion": False})
