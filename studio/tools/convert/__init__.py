"""The model converter engine: local ONNX conversion (shapes, AIPP, fusions, FP16, validation)
and the ATC command builder and log reader for the NPU. Qt-free; onnx is imported lazily."""
