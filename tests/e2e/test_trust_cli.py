"""The command line on real-model situations: ATC spellings, hints in the CLI's spelling, dynamic
inputs for fp16-check and dump, and bad files that must end in a message, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from trust_models import ort_run, paddle_style_model, shape_if_model

from studio.cli import main


def studio(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def paddle(tmp_path):
    path = tmp_path / "paddle.onnx"
    onnx.save(paddle_style_model(), path)
    return path


def test_atc_underscore_spellings_are_accepted(capsys, paddle, tmp_path):
    code, out, err = studio(capsys, "convert", f"--model={paddle}", "--framework=5", f"--output={tmp_path / 'net'}",
                            "--soc_version=Ascend310P3", "--input_shape=x:1,3,16,16", "--output_type=FP16",
                            "--precision_mode=force_fp16", "--atc", "--print_command")
    assert code == 0, err
    assert out.strip() == (f"atc --model={paddle} --framework=5 --output={tmp_path / 'net'} --soc_version=Ascend310P3 "
                           "--input_shape=x:1,3,16,16 --output_type=FP16 --precision_mode=force_fp16")
    code, out, err = studio(capsys, "convert", paddle, "-o", tmp_path / "l.onnx", "--input_shape", "x:1,3,16,16",
                            "--output_type", "FP16", "--keep_fp32", "Sigmoid")
    assert code == 0, err
    assert onnx.load(tmp_path / "l.onnx").graph.input[0].type.tensor_type.shape.dim[0].dim_value == 1


def test_print_command_rejects_an_unknown_input_and_names_the_dynamic_ones(capsys, paddle):
    code, out, err = studio(capsys, "convert", paddle, "--atc", "--soc-version", "Ascend310", "--print-command",
                            "--input-shape", "images:1,3,16,16")
    assert code == 2 and out == ""
    assert "'images', which is not an input" in err and "The model's inputs are: 'x'" in err
    code, out, err = studio(capsys, "convert", paddle, "--atc", "--soc-version", "Ascend310", "--print-command")
    assert code == 2 and out == ""
    assert "'x' (dim 0)" in err and '--input-shape="x:1,3,16,16"' in err


def test_fix_hints_are_spelled_as_the_command_line_spells_them(capsys, paddle, tmp_path):
    code, _out, err = studio(capsys, "convert", paddle, "-o", tmp_path / "o.onnx")
    assert code == 2
    assert '--input-shape="x:1,3,16,16"' in err and "--input_shape" not in err
    code, _out, err = studio(capsys, "convert", paddle, "--atc", "--print-command", "--input-shape", "x:1,3,16,16",
                             "--soc-version", "Ascend310", "--precision-mode", "force_fp61")
    assert code == 2 and "--precision-mode" in err and "--precision_mode" not in err
    code, out, err = studio(capsys, "convert", paddle, "-o", tmp_path / "o.onnx", "--input-shape", "x:1,3,16,16",
                            "--soc-version", "Ascend310")
    assert code == 0, err
    assert "ignored by the local conversion: --soc-version" in out and "--soc_version" not in out


def test_keep_fp32_of_an_unknown_op_is_an_error(capsys, paddle, tmp_path):
    code, _out, err = studio(capsys, "convert", paddle, "-o", tmp_path / "o.onnx", "--input-shape", "x:1,3,16,16",
                             "--output-type", "FP16", "--keep-fp32", "NoSuchOp")
    assert code == 2 and "'NoSuchOp' is neither an op type nor a node name" in err and "--keep-fp32" in err
    assert not (tmp_path / "o.onnx").exists()


def test_validate_with_input_file_reports_it(capsys, paddle, tmp_path):
    data = np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", data)
    code, out, err = studio(capsys, "convert", paddle, "-o", tmp_path / "o.onnx", "--input-shape", "x:1,3,16,16",
                            "--input", f"x={tmp_path / 'x.npy'}", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["validation"]["inputs"]["x"] == {"source": "file x.npy", "shape": [1, 3, 16, 16], "dtype": "float32"}
    code, out, err = studio(capsys, "convert", paddle, "-o", tmp_path / "p.onnx", "--input-shape", "x:1,3,16,16",
                            "--validate")
    assert "input x: float32 [1, 3, 16, 16] from seeded random N(0,1), seed 0" in out


def test_validate_image_without_aipp_is_refused(capsys, paddle, tmp_path):
    code, _out, err = studio(capsys, "convert", paddle, "-o", tmp_path / "o.onnx", "--input-shape", "x:1,3,16,16",
                             "--validate-image", tmp_path / "photo.png")
    assert code == 2 and "has no AIPP" in err and "--insert-op-conf" in err


def test_fp16_check_on_a_dynamic_model_needs_and_takes_input_shape(capsys, paddle, tmp_path):
    code, _out, err = studio(capsys, "fp16-check", paddle, "-o", tmp_path / "c")
    assert code == 2
    assert "Input 'x' has a dynamic dimension 0 (p2o.DynamicDimension.0)" in err
    assert "--input-shape x:N,3,16,16" in err and "--input x=FILE.npy" in err
    code, out, err = studio(capsys, "fp16-check", paddle, "-o", tmp_path / "c", "--input-shape", "x:2,3,16,16",
                            "--json")
    assert code == 0, err
    data = json.loads(out)
    manifest = json.loads((Path(data["golden"]) / "manifest.json").read_text())
    assert manifest["inputs"]["x"]["shape"] == [2, 3, 16, 16]
    # The golden dump's output is what ONNX Runtime computes on the original for that input.
    x = np.load(Path(data["golden"]) / manifest["inputs"]["x"]["file"])
    (ref,) = ort_run(paddle_style_model(), {"x": x})
    entry = next(t for t in manifest["tensors"] if t["tensor"] == "y")
    np.testing.assert_allclose(np.load(Path(data["golden"]) / entry["file"]), ref, rtol=1e-6, atol=1e-7)
    np.save(tmp_path / "x.npy", x[:1])
    code, out, err = studio(capsys, "fp16-check", paddle, "-o", tmp_path / "d", "--input", f"x={tmp_path / 'x.npy'}")
    assert code == 0, err
    assert "tensors compared" in out


def test_dump_with_input_shape_and_bad_arguments(capsys, tmp_path):
    model = tmp_path / "if.onnx"
    onnx.save(shape_if_model(), model)
    code, out, err = studio(capsys, "dump", model, "-o", tmp_path / "d", "--input-shape", "x:3,4")
    assert code == 2 and "ONNX Runtime could not run the model" in err  # N=3 cannot be split in two halves
    code, out, err = studio(capsys, "dump", model, "-o", tmp_path / "d", "--input-shape", "x:2,4")
    assert code == 0, err
    assert "input x: random, seed 0 (float32 [2, 4])" in out
    code, out, err = studio(capsys, "dump", tmp_path, "-o", tmp_path / "e")
    assert code == 2 and "got a folder" in err and "Traceback" not in err


def test_compare_refuses_a_cosine_outside_minus_one_to_one(capsys, tmp_path):
    code, _out, err = studio(capsys, "compare", tmp_path, tmp_path, "--cosine", "2")
    assert code == 2 and "outside -1..1" in err


def test_absurd_npy_and_deep_manifest_end_in_messages(capsys, paddle, tmp_path):
    np.save(tmp_path / "ok.npy", np.zeros((2, 3), np.float32))
    raw = (tmp_path / "ok.npy").read_bytes().replace(b"(2, 3)", b"(999999999999, 99999)")
    (tmp_path / "absurd.npy").write_bytes(raw)
    code, _out, err = studio(capsys, "dump", paddle, "-o", tmp_path / "d", "--input", f"x={tmp_path / 'absurd.npy'}")
    assert code == 2 and "header promises shape (999999999999, 99999)" in err
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "manifest.json").write_text("[" * 100000 + "]" * 100000)
    code, _out, err = studio(capsys, "compare", deep, deep)
    assert code == 2 and "manifest" in err.lower() and "Traceback" not in err
