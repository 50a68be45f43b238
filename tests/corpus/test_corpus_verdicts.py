"""Verdicts on real models: why a tensor with cosine 0.99999 fails, told from the data.

PP-OCR's text-direction classifier (Paddle export) in FP16 simulation: its ``Mul@11`` output has
cosine 0.99999 to FP32 and fails the mean relative error (2.05 >= 1). Almost all of that comes
from elements whose golden value is near zero, where FP16's absolute error is a large relative one.
"""

from __future__ import annotations

import pytest

from studio.core.jobs import run_job
from studio.tools.accuracy.fp16_check import fp16_check_job
from studio.tools.corpus import manifest
from studio.tools.corpus.fetch import model_path
from studio.tools.corpus.inputs import make_inputs

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def test_a_mean_relative_error_failure_at_high_cosine_is_explained_by_near_zero_golden_values(corpus_root, tmp_path):
    entry = manifest.entry("ppocr_cls")
    path = model_path(entry, corpus_root)
    result = run_job(fp16_check_job(path, tmp_path / "fp32", tmp_path / "fp16", inputs=make_inputs(entry, path)))
    row = next(r for r in result.rows if r.name == "Mul@11")
    assert row.violations == ["mean_rel_err"] and row.metrics.cosine > 0.9999
    near = row.metrics.rel_err_near_zero
    assert near is not None and near["share"] > 0.9 and near["without"] < 0.1, near
    finding = next(f for f in result.findings if f.name == "Mul@11")
    assert "mean_rel_err 2.0" in finding.message and "near zero" in finding.message
    assert "near zero" in row.metrics.reason
