"""String inputs and non-tensor outputs: a scikit-learn pipeline exported by skl2onnx (a string column
one-hot encoded, two float columns, a random forest, ZipMap probabilities) is validated, dumped and
benchmarked with its string column given as numpy text or object arrays; numbers for a string input,
text for a number input, random text and FP16 of its ai.onnx.ml ops are refused in words."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

from studio.core.errors import UserError
from studio.core.model_inputs import conform_array
from studio.core.npyfile import load_npy

ROWS = 8


def _studio(*args, home) -> subprocess.CompletedProcess:
    env = {**os.environ, "STUDIO_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "studio", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """(model path, fitted pipeline, data folder): ColumnTransformer(OneHotEncoder on a string column,
    floats passed through) + RandomForestClassifier(5 trees), exported by skl2onnx; the first ROWS
    rows saved as color.npy (<U5, numpy "str160"), color_obj.npy (object), x1.npy, x2.npy."""
    import pandas as pd
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    color = rng.choice(["red", "green", "blue"], 80)
    x1, x2 = rng.standard_normal(80).astype(np.float32), rng.standard_normal(80).astype(np.float32)
    frame = pd.DataFrame({"color": color, "x1": x1, "x2": x2})
    labels = ((color == "red") ^ (x1 > 0)).astype(np.int64)
    fitted = Pipeline([("pre", ColumnTransformer([("onehot", OneHotEncoder(handle_unknown="ignore"), ["color"])],
                                                 remainder="passthrough")),
                       ("forest", RandomForestClassifier(n_estimators=5, random_state=0))]).fit(frame, labels)
    model = convert_sklearn(fitted, initial_types=[("color", StringTensorType([None, 1])),
                                                    ("x1", FloatTensorType([None, 1])),
                                                    ("x2", FloatTensorType([None, 1]))],
                            target_opset={"": 17, "ai.onnx.ml": 3})
    folder = tmp_path_factory.mktemp("sklearn")
    onnx.save(model, folder / "pipeline.onnx")
    np.save(folder / "color.npy", color[:ROWS].reshape(-1, 1).astype("<U5"))  # numpy calls it str160
    np.save(folder / "color_obj.npy", color[:ROWS].reshape(-1, 1).astype(object), allow_pickle=True)
    np.save(folder / "x1.npy", x1[:ROWS].reshape(-1, 1))
    np.save(folder / "x2.npy", x2[:ROWS].reshape(-1, 1))
    return folder / "pipeline.onnx", fitted, frame.iloc[:ROWS], folder


def _inputs(folder, color="color.npy"):
    return ["--input", f"color={folder / color}", "--input", f"x1={folder / 'x1.npy'}",
            "--input", f"x2={folder / 'x2.npy'}"]


@pytest.mark.parametrize("color", ["color.npy", "color_obj.npy"], ids=["str160", "object"])
def test_convert_validates_a_string_column_and_compares_the_zipmap(pipeline, tmp_path, studio_home, color):
    model, fitted, rows, folder = pipeline
    out = tmp_path / "out.onnx"
    done = _studio("convert", model, "-o", out, "--validate", *_inputs(folder, color), "--json", home=studio_home)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    compared = {o["output"]: o for o in report["validation"]["outputs"]}
    assert set(compared) == {"output_label", "output_probability"}  # the ZipMap is compared too
    assert compared["output_probability"]["size"] == ROWS * 2 and report["validation"]["passed"]
    assert any("ZipMap" in w and "one column per key (0, 1)" in w for w in report["warnings"])
    assert report["validation"]["inputs"]["color"]["dtype"] == "str"
    # the converted model answers as scikit-learn does on the same rows
    import onnxruntime as ort

    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    label, maps = session.run(None, {"color": rows[["color"]].to_numpy().astype(object),
                                     "x1": rows[["x1"]].to_numpy(), "x2": rows[["x2"]].to_numpy()})
    np.testing.assert_array_equal(label, fitted.predict(rows))
    np.testing.assert_allclose([[m[0], m[1]] for m in maps], fitted.predict_proba(rows), atol=1e-6)


def _broken(model_path, tmp_path, change):
    model = onnx.load(model_path)
    change(model)
    return model


@pytest.mark.parametrize("change, why", [
    # the class keys of the ZipMap differ: a key missing on one side
    (lambda m: [a.ints.__setitem__(1, 7) for n in m.graph.node if n.op_type == "ZipMap"
                for a in n.attribute if a.name == "classlabels_int64s"], "keys differ"),
    # the forest's leaves changed: the probabilities move, the labels may stay
    (lambda m: [a.floats.__setitem__(slice(None), [0.5] * len(a.floats)) for n in m.graph.node
                if n.op_type == "TreeEnsembleClassifier" for a in n.attribute if a.name == "class_weights"], ""),
])
def test_a_zipmap_that_differs_fails_validation(pipeline, tmp_path, change, why):
    from studio.tools.convert.validate import validate

    model_path, _fitted, _rows, folder = pipeline
    given = {"color": np.load(folder / "color.npy"), "x1": np.load(folder / "x1.npy"), "x2": np.load(folder / "x2.npy")}
    original = onnx.load(model_path)
    warnings: list[str] = []
    assert validate(original, original, given=given, warnings=warnings)  # the same model passes
    warnings.clear()
    result = validate(original, _broken(model_path, tmp_path, change), given=given, warnings=warnings)
    verdicts = {o.name: o.passed for o in result.outputs}
    assert not result and verdicts["output_probability"] is False
    assert why in " ".join(warnings)


def test_dump_and_bench_take_the_string_column(pipeline, tmp_path, studio_home):
    model, _fitted, _rows, folder = pipeline
    done = _studio("dump", model, "-o", tmp_path / "dump", *_inputs(folder, "color_obj.npy"), "--json",
                   home=studio_home)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "dump" / "manifest.json").read_text())
    assert manifest["inputs"]["color"]["dtype"] == "str"
    saved = np.load(tmp_path / "dump" / manifest["inputs"]["color"]["file"], allow_pickle=False)
    np.testing.assert_array_equal(saved, np.load(folder / "color.npy"))
    assert any("'output_probability'" in w and "not dumped" in w for w in manifest["warnings"])
    done = _studio("bench", model, *_inputs(folder), "--loop", "3", "--warmup", "1", home=studio_home)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("files, needle", [
    ({"color": "x1.npy"}, "the model takes strings"),
    ({"x1": "color.npy"}, "holds text (numpy U5); the model takes float32"),
    ({"color": None}, "give --input color=FILE.npy"),
])
def test_wrong_kind_of_data_and_random_text_are_refused(pipeline, tmp_path, studio_home, files, needle):
    model, _fitted, _rows, folder = pipeline
    names = {"color": "color.npy", "x1": "x1.npy", "x2": "x2.npy", **files}
    args = [arg for name, file in names.items() if file for arg in ("--input", f"{name}={folder / file}")]
    done = _studio("convert", model, "-o", tmp_path / "out.onnx", "--validate", *args, home=studio_home)
    assert done.returncode == 2 and needle.lower() in done.stderr.lower(), done.stderr
    assert not (tmp_path / "out.onnx").exists()


def test_fp16_of_classical_ml_ops_is_refused_in_words(pipeline, tmp_path, studio_home):
    model, _fitted, _rows, folder = pipeline
    done = _studio("convert", model, "-o", tmp_path / "fp16.onnx", "--output-type", "FP16", home=studio_home)
    assert done.returncode == 2, done.stderr
    for needle in ("OneHotEncoder", "TreeEnsembleClassifier", "ZipMap", "no FP16 form", "--output-type FP32"):
        assert needle in done.stderr
    assert not (tmp_path / "fp16.onnx").exists()


def test_conform_array_makes_object_str_and_refuses_other_kinds():
    for given in (np.array([["red"], ["blue"]]), np.array([[b"red"], [b"blue"]]),
                  np.array([["red"], [b"blue"]], dtype=object)):
        array, warning = conform_array("color", given, np.object_, (None, 1), "test")
        assert array.dtype == object and array.tolist() == [["red"], ["blue"]] and warning is None
    with pytest.raises(UserError, match="holds a int"):
        conform_array("color", np.array([["red"], [3]], dtype=object), np.object_, (None, 1), "test")


def test_an_object_npy_is_read_without_running_its_pickle(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.remove, (str(tmp_path / "canary"),))

    (tmp_path / "canary").write_text("alive")
    array = np.empty((1, 1), dtype=object)
    array[0, 0] = Payload()
    np.save(tmp_path / "evil.npy", array, allow_pickle=True)
    with pytest.raises(UserError, match="not a plain array of text"):
        load_npy(tmp_path / "evil.npy", text=True)
    assert (tmp_path / "canary").exists()
    with pytest.raises(UserError, match="Python objects"):
        load_npy(tmp_path / "evil.npy")  # not read at all where no text is expected
