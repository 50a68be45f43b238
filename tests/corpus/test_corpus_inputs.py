"""Real corpus models that showed input and counting problems: each is said once, the same way.

ddddocr_rec_int8 (CNN + bidirectional DynamicQuantizeLSTM, declared output ``[1, seqlen]``,
real ``[T, 1, 8210]``), minilm_l3 (dynamic batch and sequence), minilm_l3_external (weights in a
side file), ppocr_cls (float32 image input).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from corpus_helpers import studio

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def models(corpus_root):
    return corpus_root / "models"


def test_ddddocr_lstm_macs_by_hand(models, tmp_path):
    # input width 200 -> 25 time steps; bidirectional, hidden 512, input 512 (weights [2, 512, 2048])
    proc = studio("graph", "macs", models / "ddddocr_rec_int8.onnx", "--input-shape", "input1=1,1,64,200",
                  "--run-shapes", "--json", "--top", "400")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    lstm = next(row["macs"] for row in report["top"] if row["name"] == "LSTM_202_quant")
    assert lstm == 25 * 1 * 2 * 4 * 512 * (512 + 512) == 104_857_600  # was 25,600: one per output element
    assert report["uncounted"] == 0 and report["unknown"] == 0
    assert report["total"] > 700_000_000  # was 614.7 M, 15 % low
    assert "VerifyOutputSizes" not in proc.stderr


def test_ddddocr_wrong_output_declaration_flagged_once(models, tmp_path):
    image = tmp_path / "image.npy"
    np.save(image, np.random.default_rng(0).random((1, 1, 64, 200)).astype(np.float32))
    proc = studio("bench", models / "ddddocr_rec_int8.onnx", "--input", f"input1={image}", "--loop", "50")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    flag = "output '387': the model declares shape [1, seqlen], ONNX Runtime returned [25, 1, 8210]"
    assert text.count(flag) == 1 and "VerifyOutputSizes" not in text  # was 55 ORT warnings, no flag


def test_ppocr_cls_integer_image_refused_float64_cast_with_warning(models, tmp_path):
    pixels = np.random.default_rng(0).integers(0, 256, (1, 3, 48, 192))
    np.save(tmp_path / "int.npy", pixels.astype(np.int64))
    np.save(tmp_path / "f64.npy", pixels / 255.0)
    refused = studio("bench", models / "ppocr_cls.onnx", "--input", f"x={tmp_path / 'int.npy'}", "--loop", "2")
    assert refused.returncode != 0 and "The array for input 'x' is int64; the model takes float32" in refused.stderr
    cast = studio("dump", models / "ppocr_cls.onnx", "-o", tmp_path / "d", "--input", f"x={tmp_path / 'f64.npy'}")
    assert cast.returncode == 0 and "input 'x': float64 array cast to float32" in cast.stdout


def test_minilm_convert_validate_takes_the_shape_from_the_files(models, tmp_path):
    ids = tmp_path / "ids.npy"
    mask = tmp_path / "mask.npy"
    np.save(ids, np.random.default_rng(0).integers(0, 30522, (1, 16)).astype(np.int64))
    np.save(mask, np.ones((1, 16), np.int64))
    proc = studio("convert", models / "minilm_l3.onnx", "-o", tmp_path / "c.onnx", "--validate",
                  "--input", f"input_ids={ids}", "--input", f"attention_mask={mask}", "--json")
    assert proc.returncode == 0, proc.stderr  # was: "has a dynamic dim 0 ('batch_size') ... Add --input-shape"
    report = json.loads(proc.stdout)
    assert report["validation"]["inputs"]["input_ids"]["shape"] == [1, 16]
    assert all(o["passed"] for o in report["validation"]["outputs"])


def test_minilm_external_without_its_data_said_once_everywhere(models, tmp_path):
    lone = tmp_path / "minilm_l3_external.onnx"
    shutil.copy(models / "minilm_l3_external.onnx", lone)  # the .onnx.data stays behind
    said = ("external data file 'minilm_l3_external.onnx.data' (68,967,936 bytes, for tensor "
            "'model.0.auto_model.embeddings.word_embeddings.weight' and 52 more) not found next to the model")
    shapes = ("--input-shape", "input_ids=1,16", "--input-shape", "attention_mask=1,16")
    runs = {"convert": studio("convert", lone, "-o", tmp_path / "c.onnx"),
            "dump": studio("dump", lone, "-o", tmp_path / "d", *shapes),
            "profile run": studio("profile", "run", lone, "-o", tmp_path / "p", *shapes),
            "bench": studio("bench", lone, "--loop", "2", *shapes),
            "advise": studio("advise", "--model", lone)}
    for command, proc in runs.items():
        assert proc.returncode != 0, f"{command}: {proc.stdout[-500:]}"  # advise said "verdict: Good"
        assert said in proc.stderr, (command, proc.stderr)
