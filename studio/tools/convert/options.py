"""One options object for both conversion paths: the local ONNX run and the ATC command.

:class:`ConvertOptions` mirrors ATC's command line (``--model``, ``--input_shape``,
``--insert_op_conf`` ...). The local engine (:mod:`studio.tools.convert.convert`) reads the
options it can honour on an ONNX model; :mod:`studio.tools.convert.atc_command` turns the same
object into the exact ``atc`` argv, so a remote executor can run it unchanged later.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path

from studio.core.options import option
from studio.core.thresholds import threshold_field
from studio.tools.convert import option_words as ow

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
    return [arg for text in ow.input_shape_texts(value) for arg in ("--input-shape", text)]


def framework_for(model: Path | str) -> int | None:
    """ATC's --framework for a model file, judged by its suffix (None when unknown)."""
    return SUFFIX_FRAMEWORK.get(Path(model).suffix.lower())


# ATC's own options: a local conversion (here or with Studio's engine on a host) does not read them.
ATC_ONLY = {"framework": None, "weight": None, "soc_version": None, "input_format": None, "op_debug_level": None,
            "log": None, "precision_mode": None, "dynamic_batch_size": None, "dynamic_image_size": None,
            "dynamic_dims": None, "extra_args": []}


def _path(value, _read=None) -> Path | None:
    return Path(value) if value is not None else None


_ATC = ow.ATC_GROUP
_ATOL = {precision: ow.short(atol) for precision, (atol, _rtol) in TOLERANCES.items()}
_RTOL = {precision: ow.short(rtol) for precision, (_atol, rtol) in TOLERANCES.items()}


@dataclass
class ConvertOptions:
    """Everything a conversion needs; field names follow ATC's options.

    Local-only fields: ``keep_fp32_ops`` (op types or node names that stay FP32 under FP16),
    ``keep_io_types`` (FP16 models keep FP32 inputs and outputs), ``fusions`` (our pass
    switches, on top of the fusion switch file), ``validate``/``validate_image``, ``report``.

    Each field is declared once with its ``studio convert`` option (:mod:`studio.core.options`);
    ATC users type ATC's spellings (``--input_shape``, ``--soc_version``, ``--model=...``): each
    option also answers to its ATC name, listed after Studio's.
    """

    model: Path = option(adder=ow.model_adder, parse=ow.model_read, format=ow.model_words)
    output: Path | None = option("-o", "--output", default=None, type=Path, parse=_path,
                                 help="output model (.onnx locally; with --atc the .om path)")
    framework: int | None = option("--framework", default=None, type=int, choices=[0, 1, 3, 5], group=_ATC,
                                   help="0 Caffe, 1 MindSpore, 3 TensorFlow, 5 ONNX")
    weight: Path | None = option("--weight", default=None, type=Path, parse=_path, group=_ATC,
                                 help="Caffe .caffemodel")
    soc_version: str | None = option("--soc-version", "--soc_version", default=None, group=_ATC,
                                     help="target chip, e.g. Ascend310, Ascend310P3, Ascend910B1")
    input_format: str | None = option("--input-format", "--input_format", default=None, group=_ATC,
                                      help="NCHW, NHWC, ND, NCDHW, NDHWC")
    # ATC's text ("a:1,3;b:2"), one text per --input-shape option, or {name: dims} (a structure:
    # what Studio's own callers pass, so no name holding ';' or ':' is ever read from a string)
    input_shape: str | list[str] | dict[str, tuple] | None = option(
        "--input-shape", "--input_shape", default=None, action="append", parse=ow.input_shape_read,
        format=ow.input_shape_texts,
        help='fix input shapes: "name:1,3,224,224;name2:..." (ATC) or name=1,3,224,224 (repeatable), '
             "as the other commands take it")
    output_type: str | None = option("--output-type", "--output_type", default=None,
                                     help="FP32 or FP16 (ATC: also UINT8, INT8, ... or node:index:type)")
    insert_op_conf: Path | None = option("--insert-op-conf", "--insert_op_conf", default=None, type=Path,
                                         metavar="AIPP_CFG", parse=_path, help="AIPP configuration file")
    fusion_switch_file: Path | None = option("--fusion-switch-file", "--fusion_switch_file", default=None, type=Path,
                                             parse=_path, help="ATC fusion switch file (per-pass on/off)")
    op_debug_level: int | None = option("--op-debug-level", "--op_debug_level", default=None, type=int, group=_ATC,
                                        help="0..4")
    log: str | None = option("--log", default=None, group=_ATC, help="debug, info, warning, error, null")
    precision_mode: str | None = option("--precision-mode", "--precision_mode", default=None, group=_ATC,
                                        help="force_fp16, allow_mix_precision, ...")
    out_nodes: str | None = option("--out-nodes", "--out_nodes", default=None,
                                   help='outputs to keep: "node:0;node2:0" or ONNX tensor names (local and ATC)')
    dynamic_batch_size: str | None = option("--dynamic-batch-size", "--dynamic_batch_size", default=None,
                                            group=_ATC, help='"1,2,4,8"')
    dynamic_image_size: str | None = option("--dynamic-image-size", "--dynamic_image_size", default=None,
                                            group=_ATC, help='"h1,w1;h2,w2"')
    dynamic_dims: str | None = option("--dynamic-dims", "--dynamic_dims", default=None, group=_ATC,
                                      help='"d1,d2;d3,d4"')
    extra_args: list[str] = option(default_factory=list, adder=ow.extra_adder, parse=ow.extra_read,
                                   format=ow.extra_words)
    keep_fp32_ops: list[str] = option("--keep-fp32", "--keep_fp32", default_factory=list, action="append",
                                      metavar="OP_OR_NODE", parse=ow.keep_fp32_read,
                                      help="op type or node name that stays FP32 under FP16 (repeatable, or comma "
                                           "separated)")
    keep_io_types: bool = option("--fp16-io", "--fp16_io", dest="keep_io_types", default=True, action="store_false",
                                 help="FP16 inputs and outputs too (default: keep FP32 I/O)")
    fusions: dict[str, bool] = option(default_factory=dict, adder=ow.pass_adder, parse=ow.pass_read,
                                      format=ow.pass_words)
    validate: bool = option(default=False, adder=ow.validate_adder, parse=ow.validate_read,
                            format=ow.validate_words)
    validate_image: Path | None = option("--validate-image", "--validate_image", default=None, type=Path,
                                         parse=_path, help="validate on this picture, fed through the AIPP "
                                                           "pre-processing (needs --insert-op-conf)")
    validate_inputs: dict[str, Path] = option("--input", default_factory=dict, action="append",
                                              metavar="NAME=FILE.npy", parse=ow.inputs_read, format=ow.inputs_words,
                                              help="validation data for a model input (repeatable; implies "
                                                   "--validate)")
    atol: float | None = option("--atol", default=None, type=float,
                                help=f"validation: absolute tolerance (default {_ATOL['FP32']}, FP16 {_ATOL['FP16']})")
    rtol: float | None = option("--rtol", default=None, type=float,
                                help=f"validation: relative tolerance (default {_RTOL['FP32']}, FP16 "
                                     f"{_RTOL['FP16']}); an element fails only when it is beyond both")
    # FP16 diagnosis limits (studio.core.thresholds); {}: defaults. The five flags are declared there.
    thresholds: dict = threshold_field()
    report: Path | None = option("--report", default=None, type=Path, parse=_path,
                                 help="where to write the JSON report (default OUT.report.json)")
    # What the converted model's metadata names as its source model and report, when that differs
    # from the paths this conversion reads and writes (a conversion run on a host for this computer).
    stamp_source: str | None = option("--stamp-source", default=None, help=argparse.SUPPRESS)
    stamp_report: str | None = option("--stamp-report", default=None, help=argparse.SUPPRESS)

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
        """The ``studio convert`` command line that runs this local conversion (the wizard's
        Command Preview): its declared options (:func:`studio.core.options.to_argv`) without ATC's
        own; a pass listed when it is off (every one when a fusion switch file is given, since the
        file may switch it off), so the line reproduces the wizard's pass list; ``--validate`` left
        to ``--validate-image`` when that is given."""
        from studio.core.options import to_argv

        passes = {name: on for name, on in self.fusions.items() if not on or self.fusion_switch_file is not None}
        local = replace(self, **ATC_ONLY, output=self.output or Path("OUT.onnx"), fusions=passes,
                        validate=self.validate and not self.validate_image)
        return ["studio", "convert", *to_argv(local)]
