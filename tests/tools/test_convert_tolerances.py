"""Validation's default tolerances: an exact-in-maths fold passes, a wrong one fails, the help says the values.

The model is the demo U-Net (18 Conv+BatchNormalization pairs, softmax output): its FP32 fold
re-associates float sums and moves the output by up to 6e-5; a fold that ignores the
BatchNormalization epsilon of a Keras-style export (1e-3) moves it by 4e-2.
"""

from __future__ import annotations

import re

import onnx
import pytest

from studio.core.jobs import run_job
from studio.tools.convert import passes
from studio.tools.convert.convert import convert_model
from studio.tools.convert.options import ConvertOptions
from studio.tools.convert.validate import TOLERANCES
from studio.tools.demo.models import build_unet


def _unet(tmp_path, epsilon: float | None = None):
    model = build_unet()
    if epsilon is not None:
        for node in model.graph.node:
            if node.op_type == "BatchNormalization":
                next(a for a in node.attribute if a.name == "epsilon").f = epsilon
    path = tmp_path / "unet.onnx"
    onnx.save(model, path)
    return path


def test_fp32_fold_of_the_demo_unet_passes_with_the_default_tolerances(tmp_path):
    src = _unet(tmp_path)
    report = run_job(convert_model(ConvertOptions(model=src, output=tmp_path / "folded.onnx", validate=True)))
    (out,) = report.validation["outputs"]
    assert sum(f["pass"] == "ConvBnFusion" for f in report.fusions) == 18
    # Not bit-exact: the fold re-associates the sums (measured 6.0e-5 at most) ...
    assert 1e-6 < out["max_abs_error"] < TOLERANCES["FP32"][0]
    # ... and that is no failure (before: 185 of 131,072 elements outside atol 1e-5 + rtol 1e-4).
    assert out["mismatches"] == 0 and report.validation["passed"], out
    assert not any(w.startswith("validation:") for w in report.warnings)


def test_fp32_fold_with_aipp_of_the_demo_unet_passes_with_the_default_tolerances(tmp_path):
    from studio.tools.convert.demo import demo_aipp

    src = _unet(tmp_path)
    cfg = tmp_path / "aipp.cfg"
    cfg.write_text(demo_aipp().to_text(), encoding="utf-8")
    report = run_job(convert_model(ConvertOptions(model=src, output=tmp_path / "aipp.onnx", insert_op_conf=cfg,
                                                  validate=True)))
    (out,) = report.validation["outputs"]
    assert out["max_abs_error"] > 0 and out["mismatches"] == 0 and report.validation["passed"], out


def test_a_wrong_fold_fails_with_the_default_tolerances(tmp_path, monkeypatch):
    """The same fold with a bug (the BatchNormalization epsilon ignored: 1e-5 used for 1e-3) fails."""
    def fold_ignoring_epsilon(ctx):
        for node in ctx.model.graph.node:
            if node.op_type == "BatchNormalization":
                kept = [a for a in node.attribute if a.name != "epsilon"]
                del node.attribute[:]
                node.attribute.extend(kept)
        return passes.fuse_conv_bn(ctx)

    src = _unet(tmp_path, epsilon=1e-3)
    right = run_job(convert_model(ConvertOptions(model=src, output=tmp_path / "right.onnx", validate=True)))
    assert right.validation["passed"], right.validation["outputs"]
    monkeypatch.setattr(passes, "PASSES", tuple((name, fold_ignoring_epsilon if name == "ConvBnFusion" else f, text)
                                                for name, f, text in passes.PASSES))
    wrong = run_job(convert_model(ConvertOptions(model=src, output=tmp_path / "wrong.onnx", validate=True)))
    (out,) = wrong.validation["outputs"]
    assert not wrong.validation["passed"]
    assert out["mismatches"] > 10_000 and out["max_abs_error"] > 1e-2, out
    assert out["cosine"] > 0.9999  # a cosine verdict would have let it through


@pytest.mark.parametrize("option", ["--atol", "--rtol"])
def test_convert_help_states_the_tolerances_the_code_uses(option):
    import argparse

    from studio.commands import convert

    parser = argparse.ArgumentParser()
    convert.add_arguments(parser)
    text = " ".join(next(a.help for a in parser._actions if option in a.option_strings).split())
    numbers = [float(v) for v in re.findall(r"\d+(?:\.\d+)?e-?\d+|\d+\.\d+", text)]
    index = 0 if option == "--atol" else 1
    assert numbers == [TOLERANCES["FP32"][index], TOLERANCES["FP16"][index]], text
