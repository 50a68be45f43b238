"""Run the original and the converted model on the same input and compare every output.

The input is seeded random data, or a picture. Where AIPP was inserted, the converted model gets
the raw uint8 image and the original model gets the same image pre-processed with the NumPy
reference (:meth:`~studio.tools.convert.aipp.AippOp.apply`), exactly what the NPU pipeline does.
Results print their numbers and are truthy when every output passes (Polygraphy's habit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from studio.core.errors import UserError
from studio.core.serial import json_float
from studio.core import ort_providers
from studio.tools.convert.options import TOLERANCES
from studio.core.model_inputs import check_fits, random_array

if TYPE_CHECKING:
    import onnx

    from studio.tools.convert.aipp_insert import AippInsertion

# ONNX element type -> numpy; a string tensor (8) is an object array of str, as ONNX Runtime takes it
_NP_TYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 8: np.object_,
             9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


# Default tolerances per precision (why these values: see options.TOLERANCES). An element
# mismatches only when it is off by more than ``atol`` AND by more than ``rtol`` of the reference
# (Polygraphy's elementwise check), so tiny outputs are judged by ``atol`` and large ones by ``rtol``.
FP32_ATOL, FP32_RTOL = TOLERANCES["FP32"]


@dataclass
class OutputComparison:
    """One output: the verdict by tolerance (``atol`` and ``rtol`` together) plus cosine and errors.

    inf/NaN are counted first (``reference_nonfinite``, ``converted_nonfinite``) and fail the
    output: two all-NaN outputs are no match. The errors and the cosine are over the
    ``finite_pairs`` elements finite on both sides (None in JSON when there is none).
    ``mismatches`` counts the finite elements off by more than ``atol`` and by more than ``rtol`` of
    the reference; ``nan_mismatches`` the positions whose non-finite values differ; ``worst``
    describes the element with the largest error (or the first non-finite one). ``threshold`` is
    kept for older readers: the cosine is reported, not judged (it means nothing on near-zero outputs).
    """

    name: str
    cosine: float | None
    max_abs_error: float | None
    max_rel_error: float | None
    mean_abs_error: float | None
    threshold: float = 0.0
    atol: float = FP32_ATOL
    rtol: float = FP32_RTOL
    size: int = 0
    mismatches: int = 0
    nan_mismatches: int = 0
    worst: dict = field(default_factory=dict)
    reference_nonfinite: int = 0
    converted_nonfinite: int = 0
    finite_pairs: int | None = None
    nonfinite_text: str = ""
    zero_loss: bool = False  # the converted output is all zero where the reference is not (any scale)
    rel_euclidean: float | None = None  # ‖converted − reference‖ / ‖reference‖ over the finite pairs

    # studio.core.serial: the keys of the conversion report's ``validation.outputs``
    __json_rename__ = {"name": "output"}
    __json_extra__ = ("passed",)

    @property
    def passed(self) -> bool:
        return (self.mismatches == 0 and self.nan_mismatches == 0 and not self.reference_nonfinite
                and not self.converted_nonfinite and not self.zero_loss)

    def verdict(self) -> str:
        """One line: what is not finite, the numbers over the finite pairs, the verdict."""
        where = (f" (worst at {self.worst['index']}: {_g(self.worst['reference'], '.6g')} vs "
                 f"{_g(self.worst['converted'], '.6g')})" if self.worst else "")
        numbers = (f"max abs error {_g(self.max_abs_error, '.3g')}, max rel error {_g(self.max_rel_error, '.3g')}, "
                   f"cosine {_g(self.cosine, '.6f')}")
        tolerances = f"atol {self.atol:g} + rtol {self.rtol:g}"
        if self.reference_nonfinite or self.converted_nonfinite:
            text = (f"{self.name}: inf/NaN in {self.reference_nonfinite} reference and {self.converted_nonfinite} "
                    f"converted of {self.size} elements ({self.nonfinite_text})")
            if not self.finite_pairs:
                return text + f"; no element is finite on both sides, nothing measured{where} -> FAIL"
            return (text + f"; over the {self.finite_pairs} finite pairs: {numbers}; {tolerances}: "
                    f"{self.mismatches} outside{where} -> FAIL")
        text = f"{self.name}: {numbers}; {tolerances}: "
        if self.zero_loss:
            # Tiny outputs sit inside atol, so the tolerances alone would pass a total loss.
            return (f"{self.name}: all {self.size} elements are 0 where the reference holds values up to "
                    f"{_g(self.worst.get('reference_absmax'), '.3g')} (cosine undefined, relative Euclidean "
                    "distance 1): a total loss -> FAIL")
        if self.passed:
            return text + f"all {self.size} elements within -> ok"
        bad = self.mismatches + self.nan_mismatches
        return text + f"{bad} of {self.size} elements outside{where} -> FAIL"



def _g(value: float | str | None, spec: str) -> str:
    """A number as ``spec`` says; ``n/a`` for none, and ``nan`` / ``inf`` as JSON holds them (text)."""
    return "n/a" if value is None else value if isinstance(value, str) else format(value, spec)


@dataclass
class Validation:
    """Per-output comparisons plus what was fed; ``bool(v)`` is True when all outputs pass.

    ``inputs``: per model input, where its data came from (seeded random with its distribution,
    a file, a picture), its shape and dtype — the report says exactly what was compared on.
    """

    outputs: list[OutputComparison] = field(default_factory=list)
    input_source: str = "seeded random"
    inputs: dict = field(default_factory=dict)
    atol: float = FP32_ATOL
    rtol: float = FP32_RTOL
    fp16_overflow: list[dict] = field(default_factory=list)  # float16 tensors holding inf/NaN inside
    fp16_overflow_total: int = 0  # of them, the ones that are not a saturated attention mask
    diagnosis: dict | None = None  # FP16: the one diagnosis (verdict on the outputs, cause, op, fix)

    # studio.core.serial: the keys of the conversion report's ``validation``
    __json_rename__ = {"input_source": "input"}
    __json_extra__ = {"passed": "__bool__", "fp16_overflow_text": "overflow_text"}

    def __bool__(self) -> bool:
        return bool(self.outputs) and all(o.passed for o in self.outputs) and not self.fp16_overflow_total

    def overflow_text(self) -> str:
        """One line on FP16 overflow inside the converted model ('' when none)."""
        masks = [f for f in self.fp16_overflow if f.get("mask")]
        if not self.fp16_overflow_total:
            return (f"{len(masks)} float16 tensor(s) on attention-mask paths hold -inf (first {masks[0]['tensor']}): "
                    "the mask's large negative values saturate, harmless where they end in Softmax -> ok"
                    if masks else "")
        first = self.fp16_overflow[0]
        return (f"inf/NaN inside the converted model: {self.fp16_overflow_total} float16 tensor(s) hold inf/NaN, "
                f"first {first['tensor']} (op {first['op']}, {first['op_type']}: {first['nonfinite']} of "
                f"{first['size']}); ONNX Runtime on the CPU computes between ops in FP32 and hides it from the "
                "outputs, an FP16 device does not (the FP16 verdict below says why) -> FAIL")

    def __str__(self) -> str:
        lines = [f"validation on {self.input_source}:"]
        lines += [f"  input {name}: {describe_input(info)}" for name, info in self.inputs.items()]
        lines += [f"  {o.verdict()}" for o in self.outputs]
        if self.overflow_text():
            lines.append("  " + self.overflow_text())
        return "\n".join(lines)


def describe_input(info: dict) -> str:
    """``float32 [1, 3, 224, 224] from seeded random N(0,1), seed 0`` — one input of the validation."""
    return f"{info.get('dtype')} {info.get('shape')} from {info.get('source')}"


def compare_arrays(name: str, ref: np.ndarray, got: np.ndarray, threshold: float = 0.0,
                   atol: float = FP32_ATOL, rtol: float = FP32_RTOL) -> OutputComparison:
    """Count inf/NaN, then the tolerance check, cosine and errors over the pairs finite on both
    sides (compared in float64)."""
    a = np.asarray(ref, np.float64).ravel()
    b = np.asarray(got, np.float64).ravel()
    if a.shape != b.shape:
        raise UserError(f"Output {name!r} changed shape: {np.shape(ref)} -> {np.shape(got)}", name,
                        "The conversion altered the output; check --input-shape and --out-nodes.")
    with np.errstate(all="ignore"):
        fa, fb = np.isfinite(a), np.isfinite(b)
        finite = fa & fb
        # Non-finite values that differ (inf vs finite, +inf vs -inf, NaN vs anything but NaN).
        same_nonfinite = (a == b) | (np.isnan(a) & np.isnan(b))
        differ = ~finite & ~same_nonfinite
        nan_mismatches = int(np.count_nonzero(differ))
        pairs = int(np.count_nonzero(finite))
        af, bf = (a, b) if pairs == a.size else (a[finite], b[finite])
        diff = np.abs(af - bf)
        rel = diff / np.maximum(np.abs(af), 1e-12)
        rel[diff == 0] = 0.0
        bad = (diff > atol) & (rel > rtol)
        norm = np.linalg.norm(af) * np.linalg.norm(bf)
        cosine = float(af @ bf / norm) if norm else (1.0 if np.array_equal(af, bf) else 0.0)
    mismatches = int(np.count_nonzero(bad))
    worst = {}
    if mismatches:
        index = int(np.flatnonzero(finite)[int(np.argmax(np.where(bad, diff, -1.0)))])
    elif pairs < a.size:
        index = int(np.argmax(differ)) if nan_mismatches else int(np.argmax(~finite))
    if mismatches or pairs < a.size:
        position = [int(i) for i in np.unravel_index(index, np.shape(ref))] if np.ndim(ref) else []
        worst = {"index": position, "reference": json_float(a[index]), "converted": json_float(b[index]),
                 "abs_error": json_float(abs(a[index] - b[index]))}
    measured = pairs > 0
    ref_absmax = float(np.abs(af).max()) if pairs else 0.0
    zero_loss = bool(pairs and ref_absmax > 0 and not np.any(bf))
    if zero_loss:
        if not worst:  # every difference sat inside atol: point at the largest reference value lost
            index = int(np.flatnonzero(finite)[int(np.argmax(np.abs(af)))])
            position = [int(i) for i in np.unravel_index(index, np.shape(ref))] if np.ndim(ref) else []
            worst = {"index": position, "reference": json_float(a[index]), "converted": json_float(b[index]),
                     "abs_error": json_float(abs(a[index] - b[index]))}
        worst = {**worst, "reference_absmax": ref_absmax}
    with np.errstate(all="ignore"):
        ref_norm = float(np.linalg.norm(af / ref_absmax)) * ref_absmax if ref_absmax else 0.0
        rel_euclidean = (float(np.linalg.norm((af - bf) / ref_absmax)) * ref_absmax / ref_norm if ref_norm
                         else (0.0 if measured and not np.any(bf) else None))
    if zero_loss:
        cosine = None  # undefined against an all-zero output
    return OutputComparison(name, cosine if measured else None, float(diff.max()) if measured else None,
                            float(rel.max()) if measured else None, float(diff.mean()) if measured else None,
                            threshold, atol, rtol, int(a.size), mismatches, nan_mismatches, worst,
                            int(a.size - np.count_nonzero(fa)), int(b.size - np.count_nonzero(fb)), pairs,
                            f"reference {_nonfinite(a, fa)}; converted {_nonfinite(b, fb)}" if pairs < a.size else "",
                            zero_loss, rel_euclidean)


def _nonfinite(values: np.ndarray, finite: np.ndarray) -> str:
    """``131072 NaN`` / ``3 NaN, 1 inf`` / ``none``."""
    bad = values[~finite]
    nan = int(np.count_nonzero(np.isnan(bad)))
    parts = ([f"{nan} NaN"] if nan else []) + ([f"{bad.size - nan} inf"] if bad.size - nan else [])
    return ", ".join(parts) or "none"


def _session(model: onnx.ModelProto | Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4  # errors come back as exceptions; no C++ log text on stderr
    data = model if isinstance(model, (str, Path)) else model.SerializeToString()
    session = ort.InferenceSession(str(data) if isinstance(data, Path) else data, options,
                                   providers=ort_providers.chosen())
    ort_providers.check(session)
    return session


def raw_from_image(path: Path, insertion: AippInsertion) -> np.ndarray:
    """Load a picture and lay it out as the raw input AIPP expects (resized to the source size)."""
    import cv2

    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise UserError("Cannot read the validation image", path, "Give a PNG or JPEG file.")
    n, *_ = insertion.raw_shape
    fmt = insertion.op.input_format
    h = insertion.raw_shape[1] * 2 // 3 if fmt == "YUV420SP_U8" else insertion.raw_shape[1]
    w = insertion.raw_shape[2]
    image = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA)
    from studio.tools.convert.preview import raw_from_rgb

    raw = raw_from_rgb(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), insertion.op)[0]
    return np.repeat(raw[None], n, axis=0)


def _refuse_dynamic(value) -> None:
    """A UserError when random data for ``value`` would need a size nobody gave (a dynamic dim)."""
    dims = [d.dim_value if d.dim_value > 0 else (d.dim_param or "?") for d in value.type.tensor_type.shape.dim]
    for axis, dim in enumerate(dims):
        if isinstance(dim, str):
            example = ",".join(str(d) if isinstance(d, int) else "N" for d in dims)
            raise UserError(f"Input {value.name!r} of the converted model has a dynamic axis {axis} ({dim}): "
                            "validating it would need a size Studio does not make up", f"input {value.name}, axis {axis}",
                            f"Convert with --input-shape {value.name}={example} (N = the size you run with), or give "
                            f"its data: --input {value.name}=FILE.npy.")


def _fits(actual: tuple, declared: list[int]) -> bool:
    """Same rank, and every fixed dim (a declared 0 is a dynamic one) the same size."""
    return len(actual) == len(declared) and all(d == 0 or a == d for a, d in zip(actual, declared))


def make_feeds(original: onnx.ModelProto, converted: onnx.ModelProto, insertions: list[AippInsertion],
               seed: int = 0, image: Path | None = None, given: dict[str, np.ndarray] | None = None,
               given_sources: dict[str, str] | None = None, warnings: list[str] | None = None
               ) -> tuple[dict, dict, str, dict]:
    """(feeds for the original, feeds for the converted, description, per-input description).

    ``given``: arrays for some inputs (``--input NAME=FILE.npy``); ``given_sources`` names their
    files. Given arrays are held to :func:`studio.core.model_inputs.conform_array` (a cast is noted in
    ``warnings``, an array of another kind refused).
    """
    from studio.core.model_inputs import conform_array

    def conform(name: str, array, dtype, dims) -> np.ndarray:
        array, warning = conform_array(name, array, dtype, dims, (given_sources or {}).get(name, "--input"))
        if warning and warnings is not None:
            warnings.append(warning)
        return array

    rng = np.random.default_rng(seed)
    given = dict(given or {})
    by_name = {ins.input_name: ins for ins in insertions}
    inits = {i.name for i in converted.graph.initializer}
    orig_types = {v.name: v.type.tensor_type.elem_type for v in original.graph.input}
    real_inputs = [v.name for v in converted.graph.input if v.name not in inits]
    unknown = sorted(set(given) - set(real_inputs))
    if unknown:
        raise UserError(f"--input names {unknown[0]!r}, which is not an input of the model", "--input",
                        f"The model's inputs are: {', '.join(real_inputs)}.")
    feeds_orig, feeds_conv, described = {}, {}, {}
    random_used = False
    for value in converted.graph.input:
        if value.name in inits:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        ins = by_name.get(value.name)
        if ins is not None:
            if value.name in given:
                raw = conform(value.name, given[value.name], np.uint8, shape)
                source = (given_sources or {}).get(value.name, "given data")
            elif image:
                raw, source = raw_from_image(image, ins), f"image {Path(image).name} (through AIPP)"
            else:
                _refuse_dynamic(value)
                check_fits(value.name, shape, np.uint8)
                raw, source = rng.integers(0, 256, shape, dtype=np.uint8), f"seeded random uint8 0..255, seed {seed}"
                random_used = True
            if not _fits(raw.shape, shape):
                raise UserError(f"Data for {value.name!r} has shape {list(raw.shape)}, the model wants {shape}",
                                "--input", "Give data of the model's (converted) input shape.")
            raw = raw.astype(np.uint8, copy=False)
            feeds_conv[value.name] = raw
            pre = ins.op.apply(raw)
            if ins.layout == "NCHW":
                pre = pre.transpose(0, 3, 1, 2)
            feeds_orig[value.name] = np.ascontiguousarray(pre).astype(_NP_TYPES.get(orig_types.get(value.name), np.float32))
            described[value.name] = {"source": source, "shape": list(raw.shape), "dtype": str(raw.dtype)}
            continue
        dtype = _NP_TYPES.get(value.type.tensor_type.elem_type, np.float32)
        if value.name in given:
            data = conform(value.name, given[value.name], dtype, None)
            if not _fits(data.shape, shape):
                raise UserError(f"Data for {value.name!r} has shape {list(data.shape)}, the converted model wants "
                                f"{shape}", "--input", "Give data of the input shape the model was converted to.")
            source = (given_sources or {}).get(value.name, "given data")
        else:
            if dtype is np.object_:  # before its shape: no size would help
                from studio.core.model_inputs import no_random_text

                raise no_random_text(value.name)
            _refuse_dynamic(value)
            # The one synthesiser; floats are drawn as float32 and then cast for each model, so an
            # FP32 original sees the values its FP16 conversion is given before rounding.
            floating = np.issubdtype(dtype, np.floating)
            data = random_array(value.name, shape, np.float32 if floating else dtype, rng)
            source = (f"seeded random N(0,1), seed {seed}" if floating else f"seeded random booleans, seed {seed}"
                      if dtype == np.bool_ else f"seeded random integers 0..9, seed {seed}")
        random_used = random_used or value.name not in given
        feeds_conv[value.name] = data.astype(dtype)
        feeds_orig[value.name] = data.astype(_NP_TYPES.get(orig_types.get(value.name), dtype))
        described[value.name] = {"source": source, "shape": list(data.shape),
                                 "dtype": "str" if dtype is np.object_ else np.dtype(dtype).name}
    parts = []
    if image is not None and insertions:
        parts.append(f"image {Path(image).name}")
    if given:
        parts.append("given data (" + ", ".join(sorted(given)) + ")")
    if random_used:
        parts.append(f"seeded random input (seed {seed})")
    return feeds_orig, feeds_conv, " + ".join(parts) or "no inputs", described


def validate(original: onnx.ModelProto, converted: onnx.ModelProto, insertions: list[AippInsertion] | None = None,
             seed: int = 0, image: Path | None = None, threshold: float = 0.0, atol: float = FP32_ATOL,
             rtol: float = FP32_RTOL, given: dict[str, np.ndarray] | None = None,
             given_sources: dict[str, str] | None = None, warnings: list[str] | None = None,
             diagnose=None, keep: set[str] | None = None) -> Validation:
    """Run both models with ONNX Runtime on the same input and compare outputs by name.

    The original runs as it was given (its ONNX Runtime run is the reference); the converted
    model was already checked to load before it was written. ``diagnose`` (FP16 conversions; given
    by the operations layer, which joins this engine with the accuracy one):
    ``diagnose(original, feeds, keep, validation) -> dict``, the one FP16 diagnosis, stored in
    ``validation.diagnosis``; ``keep``: the ops the conversion left in FP32.
    """
    feeds_orig, feeds_conv, source, described = make_feeds(original, converted, insertions or [], seed, image,
                                                            given, given_sources, warnings)
    try:
        ref_session = _session(original)
        ref_names = [o.name for o in ref_session.get_outputs()]
        ref = dict(zip(ref_names, ref_session.run(None, feeds_orig)))
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        raise UserError(f"ONNX Runtime could not run the original model on the validation input: "
                        f"{_first_line(exc)}", "validation (original model)",
                        "Give the inputs' data with --input NAME=FILE.npy, or check that the original "
                        "model runs in ONNX Runtime.") from exc
    try:
        conv_session = _session(converted)
        conv_names = [o.name for o in conv_session.get_outputs()]
        got = dict(zip(conv_names, conv_session.run(None, feeds_conv)))
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"ONNX Runtime could not run the converted model: {_first_line(exc)}",
                        "validation (converted model)",
                        "The original ran on the same input; turn off the pass or option that changed "
                        "the failing node and convert again.") from exc
    from studio.tools.convert.output_values import comparable

    result = Validation(input_source=source, inputs=described, atol=atol, rtol=rtol)
    notes = warnings if warnings is not None else []
    for name in conv_names:
        if name not in ref:
            continue
        # a ZipMap's maps, a sequence or strings are laid out as numbers, or said to be not compared
        pair = comparable(ref[name], got[name])
        if isinstance(pair, str):
            notes.append(f"validation: output {name!r} was NOT compared: it is {pair}; the verdict covers the "
                         "other outputs only")
            continue
        reference, value, how = pair
        if how:
            notes.append(f"validation: output {name!r} {how}")
        result.outputs.append(compare_arrays(name, reference, value, threshold, atol, rtol))
    if any(i.data_type == 10 for i in converted.graph.initializer):  # an FP16 conversion: look inside
        from studio.tools.convert.fp16_scan import fp16_overflow

        result.fp16_overflow, result.fp16_overflow_total = fp16_overflow(converted, feeds_conv)
    if diagnose is not None:
        result.diagnosis = diagnose(original, feeds_orig, set(keep or ()), result)
    return result


def _first_line(exc: Exception) -> str:
    from studio.core.ortmsg import ort_message

    return ort_message(exc)
