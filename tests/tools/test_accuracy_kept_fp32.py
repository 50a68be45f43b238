"""An op kept in FP32 by the converter is no FP16 overflow: comparing a keep-FP32 build with its
original judges each tensor in the dtype it ran in (the converted model's own run), so the
squares of a loud DFT, beyond 65504 in FP32 as in the original, are named nowhere as overflowing;
the all-FP16 build of the same model still overflows there."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from studio.core.jobs import run_job

KEEP = ["power/real_sq", "power/add", "mel/matmul", "log/add_floor", "log/log"]


def _convert(model: Path, output: Path, keep: list[str]) -> Path:
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions

    run_job(convert_model(ConvertOptions(model=model, output=output, output_type="FP16", keep_fp32_ops=keep)))
    return output


def _compare(model: Path, converted: Path, folder: Path):
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.local_dump import dump_model, reusable_inputs

    golden = run_job(dump_model(model, folder / "golden", seed=0))
    target = run_job(dump_model(converted, folder / "target", inputs=reusable_inputs(golden, converted), seed=0))
    return run_job(compare_dumps(golden, target))


def test_an_op_kept_in_fp32_is_not_an_fp16_overflow(tmp_path):
    from studio.tools.demo.journeys import build_fp16_frontend

    model = tmp_path / "fp16_frontend.onnx"
    onnx.save(build_fp16_frontend(), model)
    kept = _convert(model, tmp_path / "kept.onnx", KEEP)
    result = _compare(model, kept, tmp_path / "kept_cmp")
    row = next(r for r in result.rows if r.name == "power/real_sq" and r.metrics is not None)
    # independently: the converted model's own tensor is float32 and holds the golden's large values
    target = np.load(row.target_file)
    golden = np.load(row.golden_file)
    assert target.dtype == np.float32 and np.abs(golden).max() > 65504
    assert np.isfinite(target).all() and np.abs(target).max() > 65504
    np.testing.assert_allclose(target, golden, rtol=1e-2, atol=50)
    assert [f for f in result.findings if f.type == "fp16_overflow"] == []
    assert "overflow" not in str(result).lower()
    assert result.diagnosis.verdict == "pass"


def test_the_all_fp16_build_still_overflows_at_the_square(tmp_path):
    from studio.tools.demo.journeys import build_fp16_frontend

    model = tmp_path / "fp16_frontend.onnx"
    onnx.save(build_fp16_frontend(), model)
    result = _compare(model, _convert(model, tmp_path / "all.onnx", []), tmp_path / "all_cmp")
    row = next(r for r in result.rows if r.name == "power/real_sq" and r.metrics is not None)
    assert np.load(row.target_file).dtype == np.float16 and not np.isfinite(np.load(row.target_file)).all()
    overflow = [f for f in result.findings if f.type == "fp16_overflow"]
    assert overflow and overflow[0].name == "power/real_sq"
