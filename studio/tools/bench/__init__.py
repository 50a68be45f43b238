"""Benchmark a model: ONNX Runtime here, or msame / ais_bench (msit benchmark) on an Ascend host."""
