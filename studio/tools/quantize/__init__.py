"""INT8 quantisation with ONNX Runtime: calibrate, rank the layers by sensitivity, find the fewest to
roll back to float for an accuracy target, and measure FP32, INT8 and the mixed model together."""
