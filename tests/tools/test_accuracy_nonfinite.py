"""inf/NaN are counted first and fail, in every caller of the metrics: convert --validate, compare,
fp16-check and the advisor's closed loop. Metrics cover the pairs finite on both sides and say so.

The model is the demo U-Net; its input is a picture file holding NaN (what a pre-processing that
divides by a zero standard deviation writes). Both runs give NaN everywhere, and two all-NaN
outputs used to be reported as "max abs error 0, cosine 1.000000 ... -> ok".
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from studio.core.jobs import run_job
from studio.tools.accuracy.compare import compare_dumps
from studio.tools.accuracy.fp16_check import fp16_check_job
from studio.tools.convert.convert import convert_model
from studio.tools.convert.options import ConvertOptions
from studio.tools.demo.models import build_unet
from studio.core.serial import to_json

SHAPE = (1, 3, 256, 256)
GOLDEN_NONFINITE, CONSISTENT = "golden_nonfinite", "consistent"  # finding types


@pytest.fixture
def unet(tmp_path):
    path = tmp_path / "unet.onnx"
    onnx.save(build_unet(), path)
    return path


def _nan_image(tmp_path, share: float = 1.0):
    image = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    image.reshape(-1)[: int(image.size * share)] = np.nan
    path = tmp_path / "image.npy"
    np.save(path, image)
    return path


def test_validate_fails_all_nan_outputs_and_reports_no_numbers_for_them(tmp_path, unet):
    report = run_job(convert_model(ConvertOptions(model=unet, output=tmp_path / "out.onnx",
                                                  validate_inputs={"image": _nan_image(tmp_path)})))
    (out,) = report.validation["outputs"]
    assert not report.validation["passed"] and not out["passed"]
    assert out["reference_nonfinite"] == out["converted_nonfinite"] == out["size"] == 2 * 256 * 256
    assert out["finite_pairs"] == 0
    assert out["max_abs_error"] is None and out["cosine"] is None  # not 0 and 1: nothing was measured
    text = report.summary()
    assert "inf/NaN in 131072 reference and 131072 converted of 131072 elements" in text
    assert "nothing measured" in text and "-> FAIL" in text and "cosine 1.000000" not in text
    saved = json.loads((tmp_path / "out.report.json").read_text())
    json.dumps(saved, allow_nan=False)  # the report stays valid JSON
    assert saved["validation"]["outputs"][0]["passed"] is False


def test_validate_measures_the_finite_pairs_of_a_partly_nan_output_and_still_fails(tmp_path):
    from studio.tools.convert.validate import compare_arrays

    ref = np.linspace(-1, 1, 100)
    got = ref + 1e-6
    ref[:10] = got[:10] = np.nan
    result = compare_arrays("y", ref, got)
    assert not result.passed and result.finite_pairs == 90 and result.mismatches == 0
    assert result.max_abs_error == pytest.approx(1e-6)
    assert "over the 90 finite pairs" in result.verdict() and "reference 10 NaN; converted 10 NaN" in result.verdict()


def test_compare_and_fp16_check_fail_all_nan_tensors_and_blame_the_reference(tmp_path, unet):
    nan = np.load(_nan_image(tmp_path))
    result = run_job(fp16_check_job(unet, tmp_path / "fp32", tmp_path / "fp16", inputs={"image": nan}))
    compared = result.compared
    assert compared and all(r.violations and r.violations[0] == "nonfinite" for r in compared)
    assert not result
    types = [f.type for f in result.findings]
    assert types[0] == GOLDEN_NONFINITE and CONSISTENT not in types, types
    assert "The reference holds inf/NaN" in result.findings[0].message
    row = to_json(result)["rows"][-1]
    assert row["pass"] is False and row["finite_pairs"] == 0 and row["golden_nonfinite"] == row["target_nonfinite"]
    again = run_job(compare_dumps(tmp_path / "fp32", tmp_path / "fp16"))  # `studio compare` of the same dumps
    assert [f.type for f in again.findings][0] == GOLDEN_NONFINITE and not again


def test_advisor_closed_loop_fails_an_output_that_is_nan_on_both_sides(tmp_path, unet):
    from studio.tools.advisor.loop import compare_outputs

    (row,) = compare_outputs(unet, unet, files={"image": _nan_image(tmp_path)})
    assert row["passed"] is False and row["violations"][0] == "nonfinite"
    assert "not finite" in row["reason"]
