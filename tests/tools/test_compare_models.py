"""``studio accuracy compare-models ORIGINAL CONVERTED`` (the Converter's "Compare with original"
as an operation): the demo classifier against its FP16 conversion, on an input of our own. Its
verdict on the model output is checked against the two models' own ONNX Runtime runs and numpy."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from studio.core.jobs import run_job
from studio.ops import convert
from studio.tools.convert.options import ConvertOptions


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from studio.tools.demo.models import build_classifier

    folder = tmp_path_factory.mktemp("pair")
    original = folder / "classifier.onnx"
    onnx.save(build_classifier(), str(original))
    converted = folder / "classifier_fp16.onnx"
    run_job(convert.run(convert.Request(ConvertOptions(original, converted, output_type="FP16"))))
    x = np.random.default_rng(7).standard_normal((1, 3, 224, 224)).astype(np.float32)
    np.save(folder / "x.npy", x)
    return folder, original, converted, x


def _ort(model, x) -> np.ndarray:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0].astype(np.float64).ravel()


def _dumped(folder, tensor: str) -> np.ndarray:
    from studio.tools.accuracy.dumpset import read_manifest

    dump = read_manifest(folder)
    entry = next(e for e in dump.entries if e.tensor == tensor)
    return np.load(folder / entry.locator).astype(np.float64).ravel()


def _check_output(data: dict, out, original, converted, x) -> None:
    """Both dumps were fed ``x``; the original's output is its own ONNX Runtime run, the converted
    one's is within FP16's reach of its own run; the verdict's numbers are numpy's on the two."""
    from studio.tools.accuracy.local_dump import reusable_inputs

    np.testing.assert_array_equal(reusable_inputs(out / "golden", original)["image"], x)
    np.testing.assert_array_equal(reusable_inputs(out / "target", converted)["image"], x)
    (output,) = data["diagnosis"]["outputs"]
    golden, target = _dumped(out / "golden", "probabilities"), _dumped(out / "target", output["name"])
    np.testing.assert_allclose(golden, _ort(original, x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(target, _ort(converted, x), atol=1e-4)  # FP16 kernels may differ a little
    cosine = float(golden @ target / (np.linalg.norm(golden) * np.linalg.norm(target)))
    assert output["cosine"] == pytest.approx(cosine, abs=1e-12)
    assert output["max_abs_err"] == pytest.approx(float(np.abs(golden - target).max()), rel=1e-9)
    assert output["rel_euclidean"] == pytest.approx(float(np.linalg.norm(target - golden) / np.linalg.norm(golden)),
                                                    rel=1e-6)
    assert output["max_abs_err"] > 0  # FP16 changed the answer a little: there was something to measure


def test_compare_models_matches_both_models_own_runs(pair):
    folder, original, converted, x = pair
    out = folder / "compared"
    done = subprocess.run([sys.executable, "-m", "studio", "accuracy", "compare-models", str(original),
                           str(converted), "-o", str(out), "--input", f"image={folder / 'x.npy'}", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    _check_output(data, out, original, converted, x)
    # the converter's report paired the fused ops, and the files are where the JSON says
    assert data["mapping"] == str(converted.with_name("classifier_fp16.report.json"))
    assert any(row.get("matched_by") == "mapping" for row in data["rows"])
    assert (out / "compare.csv").is_file() and data["golden"] == str(out / "golden")


def test_without_data_both_models_get_the_same_seeded_input(pair):
    folder, original, converted, _x = pair
    from studio.ops import compare_models
    from studio.tools.accuracy.local_dump import reusable_inputs

    out = folder / "seeded"
    result = run_job(compare_models.run(compare_models.Request(original, out, converted=converted)))
    fed = reusable_inputs(out / "golden", original)["image"]
    _check_output(result.to_json(), out, original, converted, fed)
    assert bool(result) and result.to_json()["csv"] == str(out / "compare.csv")
