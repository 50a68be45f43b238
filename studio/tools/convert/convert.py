"""The local conversion job: ONNX in, deployment-ready ONNX plus a JSON report out.

Steps, as ATC orders them: load and check the model, fix input shapes and infer shapes, lift
Constant weights, run the graph passes the fusion switches allow, convert to FP16, insert AIPP,
check and save, then (optionally) validate against the original with ONNX Runtime. Each step
yields Progress and checks the cancel token; the output is written to a temporary name and
renamed, so a cancelled run leaves no half-written model.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from dataclasses import dataclass, field, fields
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.serial import to_json
from studio.tools.convert.options import LOCAL_OUTPUT_TYPES, ConvertOptions
from studio.tools.convert.rewrite import load_onnx


@dataclass
class ConvertReport:
    """What a conversion did. ``node_mapping`` maps converted node names to original ones."""

    model: str
    output: str
    inputs: dict = field(default_factory=dict)  # name -> {"shape", "dtype"}
    outputs: dict = field(default_factory=dict)
    nodes_before: int = 0
    nodes_after: int = 0
    passes: dict = field(default_factory=dict)  # pass -> on/off
    fusions: list[dict] = field(default_factory=list)
    pass_runs: list[dict] = field(default_factory=list)  # pass, applied, seconds, bytes_before/after
    node_mapping: dict[str, list[str]] = field(default_factory=dict)
    aipp: list[dict] = field(default_factory=list)
    fp16: dict | None = None
    atc_only_switches: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    validation: dict | None = None
    seconds: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    report_path: str | None = None


    def summary(self) -> str:
        """A few lines for the CLI and the panel's log."""
        lines = [f"converted {self.model} -> {self.output}",
                 f"  nodes: {self.nodes_before} -> {self.nodes_after}"]
        counts: dict[str, int] = {}
        for fusion in self.fusions:
            counts[fusion["pass"]] = counts.get(fusion["pass"], 0) + 1
        if counts:
            lines.append("  applied: " + ", ".join(f"{k} x{v}" for k, v in counts.items()))
        for item in self.aipp:
            lines.append(f"  AIPP on {item['input']}: raw {item['input_format']} uint8 {item['raw_shape']} "
                         f"({'; '.join(item['steps']) or 'layout only'})")
        if self.fp16:
            lines.append(f"  FP16: {self.fp16['converted_initializers']} weights converted, "
                         f"{len(self.fp16['kept_fp32'])} node(s) kept FP32, {self.fp16['casts_inserted']} casts")
            for kept in self.fp16["kept_fp32"]:
                lines.append(f"    kept FP32: {kept['node']} ({kept['reason']})")
            for clamped in self.fp16.get("clamped", []):
                lines.append(f"    clamped: {clamped['initializer']} ({clamped['reason']})")
        for name, info in self.inputs.items():
            lines.append(f"  input  {name}: {info['dtype']} {info['shape']}")
        for name, info in self.outputs.items():
            lines.append(f"  output {name}: {info['dtype']} {info['shape']}")
        lines += [f"  warning: {w}" for w in self.warnings]
        if self.validation:
            from studio.tools.convert.validate import OutputComparison, describe_input

            lines.append(f"  validated against the original (ONNX Runtime) on {self.validation['input']}:")
            for name, info in self.validation.get("inputs", {}).items():
                lines.append(f"    input {name}: {describe_input(info)}")
            names = {f.name for f in fields(OutputComparison)} - {"name"}
            for out in self.validation["outputs"]:
                known = {k: v for k, v in out.items() if k in names}
                lines.append("    output " + OutputComparison(out["output"], **known).verdict())
            if self.validation.get("fp16_overflow_text"):
                lines.append("    " + self.validation["fp16_overflow_text"])
            diagnosis = self.validation.get("diagnosis")
            if diagnosis:
                from studio.core.diagnosis_text import diagnosis_lines

                lines += ["    " + line for line in diagnosis_lines(diagnosis)]
        if self.report_path:
            lines.append(f"  report: {self.report_path}")
        return "\n".join(lines)


def _input_dtype(model, name: str):
    """The numpy element type of graph input ``name`` (None when the model does not say)."""
    from onnx import helper

    for value in model.graph.input:
        if value.name == name and value.type.tensor_type.elem_type:
            return helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
    return None


def _signature(values, inits) -> dict:
    from onnx import helper

    result = {}
    for v in values:
        if v.name in inits:
            continue
        if v.type.WhichOneof("value") not in (None, "tensor_type"):  # seq(map(...)) of a ZipMap, ...
            result[v.name] = {"shape": [], "dtype": _type_text(v.type)}
            continue
        t = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]
        result[v.name] = {"shape": dims, "dtype": _elem_text(t.elem_type)}
    return result


def _elem_text(elem_type: int) -> str:
    from onnx import TensorProto, helper

    if not elem_type:
        return "?"
    return "str" if elem_type == TensorProto.STRING else helper.tensor_dtype_to_np_dtype(elem_type).name


def _type_text(proto) -> str:
    """An ONNX type as ONNX writes it: ``seq(map(int64,tensor(float)))``."""
    kind = proto.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({_elem_text(proto.tensor_type.elem_type)})"
    if kind == "sequence_type":
        return f"seq({_type_text(proto.sequence_type.elem_type)})"
    if kind == "map_type":
        return f"map({_elem_text(proto.map_type.key_type)},{_type_text(proto.map_type.value_type)})"
    if kind == "optional_type":
        return f"optional({_type_text(proto.optional_type.elem_type)})"
    return kind or "?"


def convert_model(options: ConvertOptions, cancel: CancelToken | None = None, diagnose=None
                  ) -> Generator[Progress, None, ConvertReport]:
    """Convert ``options.model`` to ``options.output``; yields Progress, returns the report.
    ``diagnose``: the FP16 diagnosis the validation stores (see :func:`.validate.validate`)."""
    import onnx

    from studio.core.model_inputs import conform_array
    from studio.tools.convert import input_shape
    from studio.tools.convert.passes import PASSES, PassContext
    from studio.tools.convert.rewrite import growth_warning, prepare, run_passes

    def step(fraction: float, message: str):
        if cancel is not None:
            cancel.raise_if_cancelled()
        return Progress(fraction, message)

    if options.output is None:
        raise UserError("No output path given", "--output", "Give -o OUT.onnx.")
    output_type = (options.output_type or "FP32").upper()
    if output_type not in LOCAL_OUTPUT_TYPES:
        raise UserError(f"--output_type {options.output_type!r} is not one local conversion makes", "--output_type",
                        "Use FP32 or FP16 (other types and per-node types are for ATC: add --atc).")
    fw = options.effective_framework
    if fw is not None and fw != 5:
        raise UserError(f"Local conversion reads ONNX models; {options.model.name} is {_fw_name(fw)}", options.model,
                        "Use --atc (with --soc-version) to build the ATC command for this model.")
    if options.validate_image and not options.insert_op_conf:
        raise UserError("--validate-image feeds a picture through the AIPP pre-processing, and this conversion "
                        "has no AIPP", "--validate-image",
                        "Add --insert-op-conf AIPP_CFG, or save the picture's input tensor as .npy and use "
                        "--validate --input NAME=FILE.npy.")
    given_inputs, given_sources = _load_validate_inputs(options)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    # Parse the side files first: a typo there should fail before any heavy work.
    aipp_config = switches = None
    if options.insert_op_conf:
        from studio.tools.convert.aipp import load_aipp

        aipp_config = load_aipp(options.insert_op_conf)
    passes_on = {name: True for name, _, _ in PASSES}
    atc_only: list[str] = []
    if options.fusion_switch_file:
        from studio.tools.convert.fusion_switch import load_fusion_switch

        switches = load_fusion_switch(options.fusion_switch_file)
        passes_on.update(switches.local_passes())
        atc_only = switches.atc_only()
    for name, on in options.fusions.items():
        if name not in passes_on:
            raise UserError(f"Unknown pass {name!r}", "fusions", "Passes: " + ", ".join(passes_on))
        passes_on[name] = on

    yield step(0.02, f"loading {options.model.name}")
    model = load_onnx(options.model)
    original = onnx.ModelProto()
    original.CopyFrom(model)
    report = ConvertReport(model=str(options.model), output=str(options.output), options=to_json(options),
                           nodes_before=len(model.graph.node), passes=passes_on, atc_only_switches=atc_only)
    timings["load"] = time.perf_counter() - started
    if output_type == "FP16":
        _refuse_ml_ops(model, options.model)
    if options.validate and not options.validate_image:
        _refuse_random_text(model, given_inputs)
    keep_fp32 = _check_keep_fp32(model, options.keep_fp32_ops, output_type) if options.keep_fp32_ops else []
    yield step(0.1, "fixing input shapes")
    t0 = time.perf_counter()
    declared = input_shape.input_dims(model)
    # a given file fixes its input's shape; under AIPP the file holds the raw image of the converted input
    shaping = given_inputs if aipp_config is None else {}
    model, warnings, if_folds, fixed = prepare(model, options.input_shape, from_files=shaping)
    report.warnings += warnings
    by_option = (input_shape.parse_input_shape(options.input_shape, allow_dynamic=False, names=list(declared))
                 if options.input_shape else {})
    for name in sorted(shaping):
        # the element type too, before any heavy work (validation would refuse it after writing)
        given_inputs[name], cast = conform_array(name, given_inputs[name], _input_dtype(model, name), None,
                                                 given_sources[name])
        if cast:
            report.warnings.append(cast)
        if any(not isinstance(d, int) for d in declared.get(name, [])) and name not in by_option:
            report.warnings.append(f"input {name!r}: dynamic dims fixed to {fixed[name]} by its --input file "
                                   f"({given_sources[name]}); the converted model takes that shape")
    timings["shapes"] = time.perf_counter() - t0

    if options.out_nodes:
        from studio.tools.convert.out_nodes import cut_outputs

        yield step(0.12, "cutting the graph at --out_nodes")
        model = cut_outputs(model, options.out_nodes)
    ignored = [f"--{name}" for name in ("soc_version", "precision_mode", "op_debug_level", "log", "input_format",
                                        "dynamic_batch_size", "dynamic_image_size", "dynamic_dims", "weight")
               if getattr(options, name) not in (None, "")] + (["additional arguments"] if options.extra_args else [])
    if ignored:
        report.warnings.append(f"ATC-only options ignored by the local conversion: {', '.join(ignored)}")

    ctx = PassContext(model)
    size_before = model.ByteSize()
    fusions, runs = yield from run_passes(ctx, passes_on, cancel)
    fusions = if_folds + fusions
    for run in runs:
        timings[run.name] = run.seconds
    report.pass_runs = to_json(runs)
    grown = growth_warning(size_before, ctx.model.ByteSize(), runs)
    if grown:
        report.warnings.append(grown[0].upper() + grown[1:])
    report.fusions = to_json(fusions)
    model = ctx.model

    if output_type == "FP16":
        yield step(0.55, "converting to FP16")
        from studio.tools.convert.fp16 import convert_to_fp16

        t0 = time.perf_counter()
        report.fp16 = to_json(convert_to_fp16(model, keep_fp32, options.keep_io_types))
        timings["fp16"] = time.perf_counter() - t0

    insertions = []
    if aipp_config is not None:
        yield step(0.65, "inserting AIPP pre-processing")
        from studio.tools.convert.aipp_insert import insert_aipp

        insertions = insert_aipp(model, aipp_config)
        report.aipp = to_json(insertions)

    yield step(0.7, "checking the converted model")
    t0 = time.perf_counter()
    del model.graph.value_info[:]
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=True)
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise UserError(f"The converted model is not valid ONNX: {exc}", options.model,
                        "Turn off the pass named in the report, or report this model to the Studio developers.") from exc
    timings["check"] = time.perf_counter() - t0

    inserted = {n for ins in insertions for n in ins.nodes}
    report.node_mapping = {name: origins for name, origins in ctx.node_mapping().items()}
    for node in model.graph.node:  # Casts and AIPP nodes stand for no original node
        report.node_mapping.setdefault(node.name, [] if node.name in inserted or node.op_type == "Cast" else [node.name])
    report.nodes_after = len(model.graph.node)
    out_inits = {i.name for i in model.graph.initializer}
    report.inputs = _signature(model.graph.input, out_inits)
    report.outputs = _signature(model.graph.output, out_inits)

    # Let a reader of the converted model find its origin and the node mapping.
    report_path = options.report_path()
    stamps = {"studio.convert.source": options.stamp_source or str(options.model)}
    if report_path is not None:
        stamps["studio.convert.report"] = options.stamp_report or str(report_path)
    for key, value in stamps.items():
        entry = next((p for p in model.metadata_props if p.key == key), None) or model.metadata_props.add()
        entry.key, entry.value = key, value

    yield step(0.75, f"writing {options.output.name}")
    _save_atomic(model, options.output)

    if options.validate or options.validate_image or options.validate_inputs:
        yield step(0.8, "validating against the original (ONNX Runtime)")
        from studio.tools.convert.validate import TOLERANCES, validate

        t0 = time.perf_counter()
        atol, rtol = TOLERANCES[output_type]
        atol = atol if options.atol is None else options.atol
        rtol = rtol if options.rtol is None else options.rtol
        kept = {k["node"] for k in (report.fp16 or {}).get("kept_fp32", [])} | set(options.keep_fp32_ops or [])
        result = validate(original, model, insertions, image=options.validate_image, atol=atol, rtol=rtol,
                          given=given_inputs, given_sources=given_sources, warnings=report.warnings,
                          diagnose=diagnose if output_type == "FP16" else None, keep=kept)
        report.validation = to_json(result)
        lost = [o.name for o in result.outputs if o.zero_loss]
        if lost:
            report.warnings.append(f"validation: output {lost[0]} is all zero where the original's is not (a total "
                                   "loss, whatever the tolerances)")
        elif not all(o.passed for o in result.outputs):
            report.warnings.append(f"validation: some outputs differ from the original beyond atol {atol:g} "
                                   f"and rtol {rtol:g} together (--atol/--rtol set them)")
        if result.fp16_overflow_total and not result.diagnosis:
            report.warnings.append("validation: FP16 overflow inside the model (see validation.fp16_overflow); "
                                   "keep the ops named there in FP32 with --keep_fp32, or scale the input")
        timings["validate"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - started
    report.seconds = {k: round(v, 4) for k, v in timings.items()}
    if report_path is not None:
        report.report_path = str(report_path)
        report_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = report_path.with_name(report_path.name + ".tmp")
        tmp.write_text(json.dumps(to_json(report), indent=2), encoding="utf-8")
        os.replace(tmp, report_path)
    yield Progress(1.0, "conversion done")
    return report


def _refuse_ml_ops(model, path: Path) -> None:
    """FP16 conversion of a model holding classical-ML ops (ai.onnx.ml: TreeEnsembleClassifier,
    ZipMap, LinearClassifier...) is refused before any work: ONNX defines them on float and double
    only, and features rounded to FP16 before a tree's float thresholds can flip its decisions."""
    from collections import Counter

    ml = Counter(node.op_type for node in model.graph.node if node.domain == "ai.onnx.ml")
    if ml:
        listing = ", ".join(f"{op} ({count})" if count > 1 else op for op, count in sorted(ml.items()))
        raise UserError(f"{path.name} holds classical-ML ops (ai.onnx.ml: {listing}), which have no FP16 form",
                        path, "Convert it with --output-type FP32 (the default): these ops take float and double "
                        "only, and features rounded to FP16 before them can change their decisions.")


def _refuse_random_text(model, given: dict) -> None:
    """Validation needs data for every string input: seeded random text would invent categories."""
    from onnx import TensorProto

    from studio.core.model_inputs import no_random_text

    weights = {init.name for init in model.graph.initializer}
    for value in model.graph.input:
        if (value.name not in weights and value.name not in given
                and value.type.tensor_type.elem_type == TensorProto.STRING):
            raise no_random_text(value.name)


def _check_keep_fp32(model, names: list[str], output_type: str) -> list[str]:
    """The --keep_fp32 entries as op types and node names of the model (a typo would be ignored).

    An entry that is a name of the model is that name, whatever ``,`` it holds (tf2onnx names ops
    ``model_1/conv/BiasAdd;model_1/conv/Conv2D``); any other entry is a comma-separated list
    (``--keep-fp32 Softmax,LayerNormalization``), each part a type or a name.
    """
    import difflib

    if output_type != "FP16":
        raise UserError("--keep_fp32 only applies to FP16 conversion", "--keep_fp32",
                        "Add --output_type FP16, or drop --keep_fp32.")
    types = {node.op_type for node in model.graph.node}
    nodes = {node.name for node in model.graph.node if node.name}
    known: list[str] = []
    for entry in names:
        for name in [entry] if entry in types or entry in nodes else [p.strip() for p in entry.split(",") if p.strip()]:
            if name in types or name in nodes:
                known.append(name)
                continue
            close = difflib.get_close_matches(name, sorted(types | nodes), n=1)
            raise UserError(f"--keep_fp32 {name!r} is neither an op type nor a node name of the model", "--keep_fp32",
                            (f"Did you mean {close[0]!r}? " if close else "")
                            + "Op types in the model: " + ", ".join(sorted(types)[:30])
                            + (" ..." if len(types) > 30 else "") + ".")
    return known


def _load_validate_inputs(options: ConvertOptions) -> tuple[dict, dict]:
    """The ``--input NAME=FILE.npy`` arrays for validation, read before any heavy work."""
    from studio.core.npyfile import load_npy

    for name, value in (("--atol", options.atol), ("--rtol", options.rtol)):
        if value is not None and not (value >= 0 and value == value and value != float("inf")):
            raise UserError(f"{name} {value} is not a tolerance", name, "Give a finite number >= 0, e.g. 1e-5.")
    arrays = {name: load_npy(Path(file), what=f"--input {name}", text=True)
              for name, file in options.validate_inputs.items()}
    return arrays, {name: f"file {Path(file).name}" for name, file in options.validate_inputs.items()}


def write_text_then(path: Path | None, text: str | None, job: Generator[Progress, None, object]
                    ) -> Generator[Progress, None, object]:
    """Write a side file (the wizard's AIPP config) off the GUI thread, then run ``job``."""
    if path is not None and text is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        yield Progress(None, f"wrote {path}")
    return (yield from job)


EXTERNAL_DATA_BYTES = 1_900_000_000


def _save_atomic(model, path: Path) -> None:
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        if model.ByteSize() > EXTERNAL_DATA_BYTES:
            # Protobuf cannot hold 2 GiB: weights go to OUT.onnx.data next to the model.
            onnx.save(model, str(tmp), save_as_external_data=True, all_tensors_to_one_file=True,
                      location=path.name + ".data")
        else:
            onnx.save(model, str(tmp))
        check_loads(tmp, path)
        os.replace(tmp, path)
    except OSError as exc:
        raise UserError(f"Cannot write the converted model: {exc.strerror}", path, "Check the folder exists and is writable.") from exc
    finally:
        tmp.unlink(missing_ok=True)
        if not path.exists():
            Path(str(path) + ".data").unlink(missing_ok=True)


def check_loads(candidate: Path, path: Path) -> None:
    """Refuse a converted model ONNX Runtime cannot load: nothing is written then.

    ONNX's checker accepts models ONNX Runtime rejects (a sub-graph whose branches disagree once
    shapes are fixed, for example), so the real runtime is asked before the file takes its name.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4  # errors come back as exceptions; no C++ log text on stderr
    try:
        ort.InferenceSession(str(candidate), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        from studio.core.ortmsg import ort_message

        reason = ort_message(exc, limit=600)
        fix = ("Nothing was written. Try without the option that changed this part (--input_shape, "
               "--output_type FP16, a pass in the fusion switch file); the node named above is where ONNX Runtime "
               "stopped.")
        if "Op (If)" in reason or "Op (Loop)" in reason:
            fix = ("Nothing was written. A branch of this If/Loop does not fit the fixed input shapes, and its "
                   "condition depends on an input's value (not on a shape), so it cannot be resolved at conversion: "
                   "keep those inputs' dims dynamic (ATC: --dynamic_dims), or give shapes every branch accepts.")
        raise UserError(f"The converted model does not load in ONNX Runtime, so it was not written: {reason}",
                        path, fix) from exc


def _fw_name(fw: int) -> str:
    from studio.tools.convert.options import FRAMEWORKS

    return f"a {FRAMEWORKS.get(fw, str(fw))} model (--framework={fw})"
