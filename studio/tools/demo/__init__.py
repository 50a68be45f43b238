"""Deterministic demo content: small ONNX models and synthetic images to try Studio without data.

``models`` builds four seeded networks (U-Net, SSD detector, colorization, classifier),
``images`` draws "shapes on noise" pictures sized for them, and ``workspace`` writes both into a
folder as a job. Everything is byte-for-byte reproducible, so tests and docs can rely on it.
"""
