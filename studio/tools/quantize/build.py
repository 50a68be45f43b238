"""ONNX Runtime's static quantisation, calibrated once and rebuilt with any set of layers left in float.

The first build runs ORT's calibrator over the samples and saves the ranges in a cache file
(``quantize_static(calibration_cache_path=...)``, ORT's own JSON); every later build reads the
ranges from it instead of running the calibrator again, so a search that tries a hundred rollback
sets calibrates once. A cache from an earlier run is reused when it was made with the same method.

Which layers count: by default the compute layers Ascend's AMCT quantises (Conv, ConvTranspose,
Gemm, MatMul), so a rollback set found here is a skip list AMCT understands; ``op_types``
widens it to any op ORT quantises.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError

METHODS = ("minmax", "entropy", "percentile")
FORMATS = ("qdq", "qoperator")
COMPUTE_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul")


@dataclass
class Settings:
    """How to quantise: calibration method, per-channel weights, output format, layers considered."""

    method: str = "minmax"
    per_channel: bool = False
    format: str = "qdq"
    op_types: tuple[str, ...] = COMPUTE_OPS
    exclude: tuple[str, ...] = ()      # node names the user keeps in float whatever happens

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise UserError(f"Unknown calibration method {self.method!r}", "--method", f"Use one of: {', '.join(METHODS)}.")
        if self.format not in FORMATS:
            raise UserError(f"Unknown format {self.format!r}", "--format", f"Use one of: {', '.join(FORMATS)}.")


@contextlib.contextmanager
def _quiet():
    """ORT's quantiser logs advice ("consider pre-processing") on the root logger: not ours to print."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


@dataclass
class Builder:
    """Builds quantised variants of one model into ``workdir`` (a folder the caller owns)."""

    model: Path
    settings: Settings
    workdir: Path
    cache: Path
    builds: int = 0
    reused_cache: bool = False
    edited: int = 0                    # builds made by editing the quantised graph (the rest: quantize_static)
    _count: int = field(default=0, repr=False)
    _editor: object | None = field(default=None, repr=False)
    _candidates: tuple[str, ...] = field(default=(), repr=False)

    def enable_edits(self, full: Path, candidates: list[str]) -> bool:
        """Build later QDQ candidates by editing ``full`` (the fully quantised model, every one of
        ``candidates`` quantised) instead of quantising again (:mod:`studio.tools.quantize.edit`);
        False when the model is outside the editor's rules (every build quantises again)."""
        import onnx

        from studio.tools.quantize.edit import Editor

        if self.settings.format != "qdq":
            return False
        editor = Editor(onnx.load(str(self.model)), onnx.load(str(full)), candidates)
        if editor.model(candidates) is None:
            return False
        self._editor, self._candidates = editor, tuple(candidates)
        return True

    def calibrate(self, samples) -> Path:
        """Build the fully quantised model, calibrating on ``samples`` unless the cache holds ranges
        made by the same method from the same samples; returns the model's path."""
        from studio.tools.quantize.calib import reader

        stamp = f"{self.settings.method}:{fingerprint(samples)}"
        self.reused_cache = _cache_stamp(self.cache) == stamp
        if self.cache.exists() and not self.reused_cache:
            self.cache.unlink()  # other samples or another method: its ranges are not these
        out = self.build((), data=None if self.reused_cache else reader(samples))
        if not self.reused_cache:
            _stamp_cache(self.cache, stamp)
        return out

    def build(self, rollback, only: list[str] | None = None, data=None, exact: bool = False) -> Path:
        """The model with ``rollback`` (and the user's excludes) left in float, or only the layers
        ``only`` quantised; a new file in the work folder. Edited from the fully quantised model
        when :meth:`enable_edits` allowed it, unless ``exact`` (then ``quantize_static`` builds it)."""
        from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

        self._count += 1
        self.builds += 1
        out = self.workdir / f"build_{self._count}.onnx"
        if self._editor is not None and data is None and not exact:
            keep = set(only) if only else set(self._candidates) - set(rollback)
            edited = self._editor.model(keep & set(self._candidates))
            if edited is not None:
                import onnx

                onnx.save(edited, str(out))
                self.edited += 1
                return out
        method = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
                  "percentile": CalibrationMethod.Percentile}[self.settings.method]
        fmt = QuantFormat.QDQ if self.settings.format == "qdq" else QuantFormat.QOperator
        exclude = sorted({*self.settings.exclude, *rollback})
        try:
            with _quiet():
                quantize_static(str(self.model), str(out), data, quant_format=fmt, op_types_to_quantize=list(
                    self.settings.op_types), per_channel=self.settings.per_channel,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, calibrate_method=method,
                    nodes_to_quantize=list(only or []), nodes_to_exclude=exclude,
                    calibration_cache_path=str(self.cache))
        except UserError:
            raise
        except Exception as exc:  # ORT's quantiser raises plain exceptions on models it cannot handle
            raise UserError(f"ONNX Runtime's quantiser failed: {str(exc).splitlines()[0] if str(exc) else exc!r}",
                            self.model, "Check that the model runs in ONNX Runtime; exclude the layer it names "
                                        "(--exclude NODE) or quantise fewer op types.") from exc
        return out


def quantised_layers(original, quantised, op_types) -> list[str]:
    """Names of the layers of ``original`` (ModelProto) that ORT quantised in ``quantised``, in graph
    order: in QDQ form a layer of ``op_types`` that now reads a DequantizeLinear; in QOperator form
    one that was replaced (its name is gone)."""
    made_by = {o: n.op_type for n in quantised.graph.node for o in n.output}
    present = {n.name: n for n in quantised.graph.node}
    out = []
    for node in original.graph.node:
        if node.op_type not in op_types or not node.name:
            continue
        now = present.get(node.name)
        if now is None or any(made_by.get(name) == "DequantizeLinear" for name in now.input):
            out.append(node.name)
    return out


def fingerprint(samples) -> str:
    """A digest of the calibration samples (names, shapes, bytes): a cache of other samples is not reused."""
    import hashlib

    digest = hashlib.sha256()
    for feeds in samples:
        for name in sorted(feeds):
            array = feeds[name]
            digest.update(f"{name}{array.shape}{array.dtype}".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()[:16]


STAMP_KEY = "studio_calibration"  # beside ORT's keys in its cache file: method and samples' digest


def _cache_stamp(path: Path) -> str | None:
    import json

    try:
        return json.loads(path.read_text(encoding="utf-8")).get(STAMP_KEY)
    except (OSError, ValueError, AttributeError):
        return None


def _stamp_cache(path: Path, stamp: str) -> None:
    import json
    import os

    data = json.loads(path.read_text(encoding="utf-8"))
    data[STAMP_KEY] = stamp
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def scratch(prefix: str = "studio-quantize-") -> tempfile.TemporaryDirectory:
    """A private work folder for the builds (deleted by the caller's ``with``)."""
    return tempfile.TemporaryDirectory(prefix=prefix)
