"""Studio: a workbench for putting neural networks on Ascend NPUs and ONNX Runtime."""

__version__ = "0.1.0"
