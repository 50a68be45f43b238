"""One options object for both conversion paths: the local ONNX run and the ATC command.

:class:`ConvertOptions` mirrors ATC's command line (``--model``, ``--input_shape``,
``--insert_op_conf`` ...). The local engine (:mod:`studio.tools.convert.convert`) reads the
options it can honour on an ONNX model; :mod:`studio.tools.convert.atc_command` turns the same
object into the exact ``atc`` argv, so a remote executor can run it unchanged later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# ATC's --framework values and the model suffixes that go with them.
FRAMEWORKS = {0: "Caffe", 1: "MindSpore", 3: "TensorFlow", 5: "ONNX"}
SUFFIX_FRAMEWORK = {".prototxt": 0, ".air": 1, ".pb": 3, ".onnx": 5}
LOCAL_OUTPUT_TYPES = ("FP32", "FP16")

# Validation tolerances per precision, (atol, rtol): an output element fails only when it is off
# by more than atol AND by more than rtol x |reference|.
# FP32: a fold (Conv+BN, constants) is exact in maths but re-associates float sums; on the demo
# U-Net that moves a softmax output by up to 6e-5 (1.5e-4 relative), and a wrong fold (BN
# epsilon 1e-3 instead of 1e-5) by 4e-2. 1e-4 / 1e-3 passes the first and fails the second;
# ONNX Runtime's own check of its graph fusions (compare_bert_results) uses the same defaults.
# FP16: unit roundoff 4.9e-4; through tens of layers normal drift reaches 1e-3 - 1e-2 (corpus:
# slanet 7.9e-3, ppocr_rec 3.8e-3, minilm 3.1e-3 max abs error), so 1e-2 / 5e-2: 1e-3 / 1e-2
# fails ddddocr_det, ppocr_rec, slanet and both MiniLMs at cosine 0.999998 and above.
TOLERANCES = {"FP32": (1e-4, 1e-3), "FP16": (1e-2, 5e-2)}


def shape_argv(value: str | list[str] | dict | None) -> list[str]:
    """``--input-shape`` options for an ``input_shape`` value: one per text, or one ``NAME=DIMS``
    per input of a structure (the dims follow the last ``=``, so any name reads back whole)."""
    if not value:
        return []
    if isinstance(value, dict):
        texts = [f"{name}=" + ",".join(f"{d[0]}~{d[1]}" if isinstance(d, (tuple, list)) else str(d) for d in dims)
                 for name, dims in value.items()]
    else:
        texts = [value] if isinstance(value, str) else list(value)
    return [arg for text in texts for arg in ("--input-shape", text)]


def framework_for(model: Path | str) -> int | None:
    """ATC's --framework for a model file, judged by its suffix (None when unknown)."""
    return SUFFIX_FRAMEWORK.get(Path(model).suffix.lower())


@dataclass
class ConvertOptions:
    """Everything a conversion needs; field names follow ATC's options.

    Local-only fields: ``keep_fp32_ops`` (op types or node names that stay FP32 under FP16),
    ``keep_io_types`` (FP16 models keep FP32 inputs and outputs), ``fusions`` (our pass
    switches, on top of the fusion switch file), ``validate``/``validate_image``, ``report``.
    """

    model: Path
    output: Path | None = None
    framework: int | None = None
    weight: Path | None = None
    soc_version: str | None = None
    input_format: str | None = None
    # ATC's text ("a:1,3;b:2"), one text per --input-shape option, or {name: dims} (a structure:
    # what Studio's own callers pass, so no name holding ';' or ':' is ever read from a string)
    input_shape: str | list[str] | dict[str, tuple] | None = None
    output_type: str | None = None
    insert_op_conf: Path | None = None
    fusion_switch_file: Path | None = None
    op_debug_level: int | None = None
    log: str | None = None
    precision_mode: str | None = None
    out_nodes: str | None = None
    dynamic_batch_size: str | None = None
    dynamic_image_size: str | None = None
    dynamic_dims: str | None = None
    extra_args: list[str] = field(default_factory=list)
    keep_fp32_ops: list[str] = field(default_factory=list)
    keep_io_types: bool = True
    fusions: dict[str, bool] = field(default_factory=dict)
    validate: bool = False
    validate_image: Path | None = None
    validate_inputs: dict[str, Path] = field(default_factory=dict)
    atol: float | None = None
    rtol: float | None = None
    thresholds: dict = field(default_factory=dict)  # FP16 diagnosis limits (studio.core.thresholds); {}: defaults
    report: Path | None = None
    # What the converted model's metadata names as its source model and report, when that differs
    # from the paths this conversion reads and writes (a conversion run on a host for this computer).
    stamp_source: str | None = None
    stamp_report: str | None = None

    def __post_init__(self) -> None:
        for name in ("model", "output", "weight", "insert_op_conf", "fusion_switch_file",
                     "validate_image", "report"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                setattr(self, name, Path(value))

    @property
    def effective_framework(self) -> int | None:
        """The --framework given, or the one the model's suffix implies."""
        return self.framework if self.framework is not None else framework_for(self.model)

    def report_path(self) -> Path | None:
        """Where the local conversion writes its JSON report (``OUT.report.json`` by default)."""
        if self.report is not None:
            return self.report
        if self.output is None:
            return None
        return self.output.with_name(self.output.stem + ".report.json")

    def cli_argv(self) -> list[str]:
        """The ``studio convert`` command line that runs this local conversion."""
        argv = ["studio", "convert", str(self.model), "-o", str(self.output or "OUT.onnx")]
        argv += shape_argv(self.input_shape)
        for flag, value in (("--output-type", self.output_type),
                            ("--insert-op-conf", self.insert_op_conf), ("--fusion-switch-file", self.fusion_switch_file),
                            ("--out-nodes", self.out_nodes), ("--report", self.report),
                            ("--validate-image", self.validate_image)):
            if value:
                argv += [flag, str(value)]
        argv += [arg for op in self.keep_fp32_ops for arg in ("--keep-fp32", op)]
        argv += [arg for name, file in self.validate_inputs.items() for arg in ("--input", f"{name}={file}")]
        for flag, value in (("--atol", self.atol), ("--rtol", self.rtol)):
            if value is not None:
                argv += [flag, f"{value:g}"]
        from studio.core.thresholds import threshold_argv

        argv += threshold_argv(self.thresholds)
        if not self.keep_io_types:
            argv.append("--fp16-io")
        argv += self.pass_argv()
        if self.validate and not self.validate_image:
            argv.append("--validate")
        return argv

    def pass_argv(self) -> list[str]:
        """``--pass NAME=off`` for each local pass switched off (and ``=on`` for every pass when a
        fusion switch file is given, since the file may switch it off), so the command line
        reproduces the wizard's pass list."""
        out = []
        for name, on in self.fusions.items():
            if not on or self.fusion_switch_file is not None:
                out += ["--pass", f"{name}={'on' if on else 'off'}"]
        return out

