"""Build the exact ``atc`` command from :class:`ConvertOptions`, checked against ATC's rules.

Every rule that ATC would reject at start-up (E10001..E10057) is checked here first, with the
option named and the fix given, so a remote run never fails on a typo after an upload. The argv
is a plain list (what an executor runs, local or over SSH); :func:`preview` quotes it for a
shell, for the wizard's Command Preview.
"""

from __future__ import annotations

import difflib
import re
import shlex
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.convert.input_shape import parse_input_shape
from studio.tools.convert.option_words import split_extra_args  # noqa: F401 - the wizard reads it here
from studio.tools.convert.options import FRAMEWORKS, SUFFIX_FRAMEWORK, ConvertOptions

SOC_VERSIONS = (
    "Ascend310", "Ascend310P1", "Ascend310P3", "Ascend310P5", "Ascend310P7", "Ascend310B1", "Ascend310B4",
    "Ascend910", "Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA",
    "Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3", "Ascend910B4",
    "Ascend910_9391", "Ascend910_9392", "Ascend910_9381", "Ascend910_9382", "Ascend910_9372", "Ascend910_9362",
    "Ascend035",
)
INPUT_FORMATS = ("NCHW", "NHWC", "ND", "NCDHW", "NDHWC")
OUTPUT_TYPES = ("FP32", "FP16", "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "UINT64", "INT64", "DOUBLE")
PRECISION_MODES = ("force_fp16", "force_fp32", "cube_fp16in_fp32out", "allow_fp32_to_fp16", "must_keep_origin_dtype",
                   "allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16", "allow_fp32_to_bf16")
LOG_LEVELS = ("debug", "info", "warning", "error", "null")
# Options a user may add as "additional arguments" (beyond the ones the wizard has fields for).
EXTRA_OPTIONS = {
    "mode", "input_fp16_nodes", "is_input_adjust_hw_layout", "is_output_adjust_hw_layout", "disable_reuse_memory",
    "enable_small_channel", "enable_single_stream", "enable_compress_weight", "compress_weight_conf",
    "compression_optimize_conf", "sparsity", "buffer_optimize", "op_precision_mode", "op_name_map",
    "enable_scope_fusion_passes", "singleop", "json", "om", "virtual_type", "core_type", "aicore_num",
    "external_weight", "op_compiler_cache_dir", "op_compiler_cache_mode", "debug_dir", "status_check",
    "save_original_model", "display_model_info", "shape_generalized_build_mode", "op_debug_config",
    "atomic_clean_policy", "deterministic", "host_env_os", "host_env_cpu", "mdl_bank_path", "op_bank_path",
    "enable_attr_compression", "input_shape_range", "op_select_implmode", "optypelist_for_implmode",
    "precision_mode_v2", "modify_mixlist", "keep_dtype", "customize_dtypes", "allow_hf32", "dump_mode",
    "check_report", "auto_tune_mode", "input_shape_range", "log_path", "input_type",
}
FIELD_OPTIONS = ("model", "weight", "framework", "output", "soc_version", "input_format", "input_shape",
                 "output_type", "insert_op_conf", "fusion_switch_file", "op_debug_level", "log", "precision_mode",
                 "out_nodes", "dynamic_batch_size", "dynamic_image_size", "dynamic_dims")


def _choice(option: str, value: str, allowed, code: str = "E10001") -> None:
    if value not in allowed:
        close = difflib.get_close_matches(value, list(allowed), n=1, cutoff=0.5)
        hint = f"Did you mean {close[0]}? " if close else ""
        raise UserError(f"Value {value!r} for --{option} is invalid ({code})", f"--{option}",
                        hint + "Allowed: " + ", ".join(allowed) + ".")


def _check_soc(value: str | None) -> None:
    if not value:
        raise UserError("--soc_version is required (E10007)", "--soc_version",
                        "Give the target chip, e.g. Ascend310 or Ascend310P3 ('npu-smi info' shows it on the host).")
    if value in SOC_VERSIONS or re.fullmatch(r"Ascend(310|910|950)\w*", value):
        return
    _choice("soc_version", value, SOC_VERSIONS)


def _check_output_type(value: str) -> None:
    if ":" not in value:
        _choice("output_type", value.upper(), OUTPUT_TYPES)
        return
    for entry in filter(None, value.split(";")):
        parts = entry.rsplit(":", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            raise UserError(f"Entry {entry!r} of --output_type is not node:index:type (E10001)", "--output_type",
                            'Write "node1:0:FP16;node2:1:FP32", or one type for all outputs.')
        _choice("output_type", parts[2].upper(), OUTPUT_TYPES)


def _check_dynamic(options: ConvertOptions, shapes) -> None:
    dynamic = [name for name in ("dynamic_batch_size", "dynamic_image_size", "dynamic_dims") if getattr(options, name)]
    if len(dynamic) > 1:
        raise UserError("--" + " and --".join(dynamic) + " are mutually exclusive (E10009)", "--" + dynamic[1],
                        "Keep one of --dynamic_batch_size, --dynamic_image_size and --dynamic_dims.")
    open_dims = [(n, i) for n, s in (shapes or {}).items() for i, d in enumerate(s.dims) if d == -1]
    if dynamic and not shapes:
        raise UserError(f"--{dynamic[0]} needs --input_shape with -1 at the dynamic dims (E10018)", "--input_shape",
                        'Add e.g. --input_shape="data:-1,3,224,224" with --dynamic_batch_size="1,2,4,8".')
    if open_dims and not dynamic:
        name, index = open_dims[0]
        raise UserError(f"Dim {index} of input {name!r} is -1 but no dynamic option is given (E10018)",
                        "--input_shape", f"Give a fixed size for dim {index} of {name!r}, or add --dynamic_batch_size "
                        "(batch dim) / --dynamic_image_size (H, W) / --dynamic_dims.")
    if options.dynamic_batch_size:
        values = [v.strip() for v in options.dynamic_batch_size.split(",") if v.strip()]
        if not all(v.isdigit() and int(v) > 0 for v in values):
            raise UserError(f"Value {options.dynamic_batch_size!r} for --dynamic_batch_size is invalid (E10001)",
                            "--dynamic_batch_size", 'Give positive batch sizes, e.g. "1,2,4,8".')
        if not 2 <= len(values) <= 100:
            raise UserError(f"--dynamic_batch_size has {len(values)} profile(s); ATC takes 2 to 100 (E10035)",
                            "--dynamic_batch_size", 'Give 2..100 sizes, e.g. "1,2,4,8".')
        if len(set(values)) != len(values):
            raise UserError("--dynamic_batch_size repeats a size (E10039)", "--dynamic_batch_size", "Remove duplicates.")
        if not any(i == 0 for _, i in open_dims):
            raise UserError("--dynamic_batch_size needs -1 as the batch (first) dim in --input_shape (E10031)",
                            "--input_shape", 'e.g. --input_shape="data:-1,3,224,224".')
    if options.dynamic_image_size:
        profiles = [p.strip() for p in options.dynamic_image_size.split(";") if p.strip()]
        if not all(re.fullmatch(r"\d+,\d+", p) for p in profiles):
            raise UserError(f"Value {options.dynamic_image_size!r} for --dynamic_image_size is invalid (E10020)",
                            "--dynamic_image_size", 'Write "h1,w1;h2,w2", e.g. "416,416;832,832".')
        if not 2 <= len(profiles) <= 100:
            raise UserError(f"--dynamic_image_size has {len(profiles)} profile(s); ATC takes 2 to 100 (E10035)",
                            "--dynamic_image_size", "Give at least two h,w pairs.")
        if sum(1 for _ in open_dims) < 2:
            raise UserError("--dynamic_image_size needs -1 at H and W in --input_shape (E10019)", "--input_shape",
                            'e.g. --input_shape="data:1,3,-1,-1".')


def build_atc_argv(options: ConvertOptions, check_files: bool = True) -> list[str]:
    """The ``atc`` argv for ``options``, after checking ATC's rules. Paths are kept as given.

    ``check_files`` also reads local AIPP and fusion switch files to check them (turn it off for
    paths that only exist on the remote host).
    """
    model = options.model
    if not str(model):
        raise UserError("--model is required (E10004)", "--model", "Give the model file.")
    suffix = model.suffix.lower()
    framework = options.framework if options.framework is not None else SUFFIX_FRAMEWORK.get(suffix)
    if framework is None:
        raise UserError(f"Cannot tell the framework of {model.name} (E10007)", "--framework",
                        "Add --framework: 0 Caffe (.prototxt), 1 MindSpore (.air), 3 TensorFlow (.pb), 5 ONNX (.onnx).")
    if framework not in FRAMEWORKS:
        raise UserError(f"Value {framework} for --framework is invalid (E10001)", "--framework",
                        "Use 0 (Caffe), 1 (MindSpore), 3 (TensorFlow) or 5 (ONNX).")
    implied = SUFFIX_FRAMEWORK.get(suffix)
    if implied is not None and implied != framework:
        raise UserError(f"--framework={framework} ({FRAMEWORKS[framework]}) does not match {model.name} "
                        f"({FRAMEWORKS[implied]}) (E10041)", "--framework", f"Use --framework={implied}.")
    if framework == 0 and not options.weight:
        raise UserError("--weight must not be empty when --framework is 0 (Caffe) (E10008)", "--weight",
                        "Give the .caffemodel that goes with the .prototxt.")
    if options.weight and framework != 0:
        raise UserError(f"--weight is only for Caffe models; {model.name} is {FRAMEWORKS[framework]} (E10001)",
                        "--weight", "Remove --weight.")
    if framework == 1 and suffix not in (".air", ""):
        raise UserError("MindSpore conversion needs an .air model (E10001)", "--model", "Export the model as AIR.")
    _check_soc(options.soc_version)
    if not options.output:
        raise UserError("--output is required (E10007)", "--output", "Give the path and name of the .om, without suffix.")
    output = str(options.output)
    if output.endswith(".om"):
        output = output[:-3]  # ATC appends .om itself
    argv = ["atc", f"--model={model}", f"--framework={framework}"]
    if options.weight:
        argv.append(f"--weight={options.weight}")
    argv += [f"--output={output}", f"--soc_version={options.soc_version}"]
    if options.input_format:
        _choice("input_format", options.input_format, INPUT_FORMATS)
        if options.insert_op_conf and options.input_format not in ("NCHW", "NHWC"):
            raise UserError(f"--input_format={options.input_format} cannot be used with AIPP (E10001)",
                            "--input_format", "With --insert_op_conf use NCHW or NHWC.")
        argv.append(f"--input_format={options.input_format}")
    names = onnx_input_names(Path(model)) if framework == 5 and check_files else None
    shapes = parse_input_shape(options.input_shape, names=names) if options.input_shape else None
    _check_dynamic(options, shapes)
    if framework == 5 and check_files and Path(model).is_file():
        check_onnx_inputs(Path(model), shapes)
    if options.input_shape:
        _check_atc_names(shapes)
        argv.append(f"--input_shape={';'.join(s.text() for s in shapes.values())}")
    for name in ("dynamic_batch_size", "dynamic_image_size", "dynamic_dims"):
        if getattr(options, name):
            argv.append(f"--{name}={getattr(options, name)}")
    if options.output_type:
        _check_output_type(options.output_type)
        argv.append(f"--output_type={options.output_type.upper() if ':' not in options.output_type else options.output_type}")
    if options.out_nodes:
        if framework == 3 and not all(re.fullmatch(r".+:\d+", n) for n in options.out_nodes.split(";") if n):
            raise UserError(f"--out_nodes {options.out_nodes!r}: TensorFlow nodes need an output index (E10001)",
                            "--out_nodes", 'Write "node:0;node2:0".')
        argv.append(f"--out_nodes={options.out_nodes}")
    if options.insert_op_conf:
        if check_files and Path(options.insert_op_conf).exists():
            from studio.tools.convert.aipp import load_aipp

            load_aipp(options.insert_op_conf)
        argv.append(f"--insert_op_conf={options.insert_op_conf}")
    if options.fusion_switch_file:
        if check_files and Path(options.fusion_switch_file).exists():
            from studio.tools.convert.fusion_switch import load_fusion_switch

            load_fusion_switch(options.fusion_switch_file)
        argv.append(f"--fusion_switch_file={options.fusion_switch_file}")
    if options.precision_mode:
        _choice("precision_mode", options.precision_mode, PRECISION_MODES)
        argv.append(f"--precision_mode={options.precision_mode}")
    if options.op_debug_level is not None:
        if options.op_debug_level not in range(5):
            raise UserError(f"Value {options.op_debug_level} for --op_debug_level is invalid (E10001)",
                            "--op_debug_level", "Use 0 (off) to 4 (keep .o/.json/.cce and UB fusion json).")
        argv.append(f"--op_debug_level={options.op_debug_level}")
    if options.log:
        if options.log not in LOG_LEVELS:
            raise UserError(f"Value {options.log!r} for parameter --log is invalid (E10010)", "--log",
                            "Use debug, info, warning, error or null.")
        argv.append(f"--log={options.log}")
    argv += _check_extra(options.extra_args)
    return argv


def onnx_input_names(model: Path) -> list[str] | None:
    """The real input names of an ONNX model file here; None when it cannot be read (ATC reports it)."""
    from studio.tools.convert.input_shape import input_dims

    if not model.is_file():
        return None
    try:
        import onnx

        return list(input_dims(onnx.load(str(model), load_external_data=False)))
    except Exception:  # noqa: BLE001 - an unreadable model is ATC's to report
        return None


def _check_atc_names(shapes: dict) -> None:
    """ATC splits its --input_shape at every ';': a name holding one cannot be written there."""
    bad = [name for name in shapes if ";" in name]
    if bad:
        raise UserError(f"Input {bad[0]!r} holds ';', which ATC's --input_shape cannot carry (it splits entries at "
                        "';')", "--input_shape",
                        "Drop --input_shape when the model's input shapes are fixed already, or rename the input "
                        "(e.g. with onnx.utils / onnx-graphsurgeon) before ATC.")


def check_onnx_inputs(model: Path, shapes: dict | None) -> None:
    """Check --input_shape against the ONNX model's real inputs, as ATC does after an upload.

    Every name must be an input of the model (E10016); ranks must agree (a fixed dim may be
    given another size: ATC lets --input_shape override it, e.g. with AIPP cropping); every
    input with a dynamic dim must get a size (or -1 with a dynamic option) in --input_shape.
    """
    from studio.tools.convert.input_shape import input_dims, suggest_spec_for, unknown_input

    try:
        import onnx

        proto = onnx.load(str(model), load_external_data=False)
    except Exception:  # noqa: BLE001 - an unreadable model is ATC's to report (it may be a TF/Caffe file)
        return
    current = input_dims(proto)
    shapes = shapes or {}
    for name in shapes:
        if name not in current:
            raise unknown_input("--input_shape", name, list(current), model.name)
    for name, spec in shapes.items():
        dims = current[name]
        if len(spec.dims) != len(dims):
            raise UserError(f"Input {name!r} has {len(dims)} dims but --input_shape gives {len(spec.dims)} (E10049)",
                            "--input_shape", f"Give {len(dims)} dims, e.g. {suggest_spec_for(name, dims)}.")
    missing = {name: [i for i, d in enumerate(dims) if not isinstance(d, int)]
               for name, dims in current.items() if name not in shapes}
    missing = {name: axes for name, axes in missing.items() if axes}
    if missing:
        listing = "; ".join(f"{name!r} (dim {', '.join(map(str, axes))})" for name, axes in missing.items())
        spec = ";".join(s.text() for s in shapes.values())
        spec = ";".join(filter(None, [spec] + [suggest_spec_for(name, current[name]) for name in missing]))
        raise UserError(f"{len(missing)} input(s) of {model.name} have dynamic dims and no size in --input_shape: "
                        f"{listing}", "--input_shape",
                        f'Add --input_shape="{spec}" (replace 1 with the sizes you deploy with), or -1 at '
                        "those dims with --dynamic_batch_size / --dynamic_image_size / --dynamic_dims.")


def _check_extra(extra: list[str]) -> list[str]:
    """Additional arguments: ``--name=value`` each, a known ATC option, not one set above."""
    result = []
    for arg in extra:
        match = re.fullmatch(r"--([a-z0-9_]+)(=(.*))?", arg)
        if not match:
            raise UserError(f"Additional argument {arg!r} is not --option=value", "additional arguments",
                            "Write each as --name=value (quote values with spaces).")
        name, value = match[1], match[3]
        if name in FIELD_OPTIONS:
            raise UserError(f"--{name} is set twice: in its own field and in the additional arguments (E10001)",
                            "additional arguments", f"Remove --{name} from the additional arguments.")
        if name not in EXTRA_OPTIONS:
            close = difflib.get_close_matches(name, sorted(EXTRA_OPTIONS), n=1)
            raise UserError(f"--{name} is not an ATC option", "additional arguments",
                            f"Did you mean --{close[0]}?" if close else "See 'atc --help' for the options.")
        if value == "":
            raise UserError(f"Value for --{name} is empty (E10004)", "additional arguments", f"Give --{name}=VALUE.")
        result.append(arg)
    return result


def preview(argv: list[str]) -> str:
    """The command as one shell line (what the wizard shows and copies)."""
    return shlex.join(argv)


def remote_plan(options: ConvertOptions, remote_dir: str) -> tuple[list[str], list[tuple[Path, str]], tuple[str, Path]]:
    """The same conversion run on a remote host: (argv, uploads, download).

    Every local input file (model, weight, AIPP config, fusion switch file) is uploaded to
    ``remote_dir`` under its own name; the argv names the remote copies; the .om comes back to
    the local output path. The remote executor runs ``argv`` unchanged.
    """
    from dataclasses import replace

    remote = remote_dir.rstrip("/")
    uploads: list[tuple[Path, str]] = []
    changes: dict[str, object] = {}
    for name in ("model", "weight", "insert_op_conf", "fusion_switch_file"):
        local = getattr(options, name)
        if local is not None:
            target = f"{remote}/{Path(local).name}"
            uploads.append((Path(local), target))
            changes[name] = Path(target)
    output = Path(options.output or Path(options.model).with_suffix(""))
    stem = output.name[:-3] if output.name.endswith(".om") else output.name
    changes["output"] = Path(f"{remote}/{stem}")
    argv = build_atc_argv(options, check_files=True)  # check the local files once
    argv = build_atc_argv(replace(options, **changes), check_files=False)
    local_om = output if output.suffix == ".om" else output.with_name(stem + ".om")
    return argv, uploads, (f"{remote}/{stem}.om", local_om)
