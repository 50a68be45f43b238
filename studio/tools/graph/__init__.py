"""Model graph engine: one graph model, readers for ONNX / OM / atc JSON, layout, grouping, export.

Qt-free. ``read_graph(path, cancel)`` (in :mod:`studio.tools.graph.reader`) is the entry point.
"""
