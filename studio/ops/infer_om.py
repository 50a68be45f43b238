"""An .om over a folder of pictures: msame or ais_bench run it where the target says, the rest here.

The OM's input and output descriptions are read here (its MODEL_DEF); the pictures are
preprocessed here with the same presets as an ONNX run, their tensors go up as one archive,
one command on the target unpacks them and runs the tool over the folder (the tool is found
as ATC and msprof are: on PATH after the host's toolkit ``set_env.sh``), the outputs come back
as one folder download, and post-processing, metrics and overlays run here through the same
:class:`~studio.tools.infer.results.ResultSink` as a local run. So the folder written is the
one a local run writes, whatever the number of pictures: one upload, one run, one download.
"""

from __future__ import annotations

import secrets
import shlex
import tempfile
import time
from collections.abc import Generator
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.ops.toolkit import ToolRun, run_on_toolkit

_TYPES = {"float32": "float32", "float16": "float16", "uint8": "uint8", "int8": "int8", "int32": "int32",
          "int64": "int64", "int16": "int16", "uint16": "uint16", "float64": "float64", "bool": "bool"}


def om_specs(model: Path):
    """(the first input, the outputs) of an OM as TensorSpecs; a clear error for what cannot run."""
    from studio.tools.graph.om_reader import read_om
    from studio.tools.infer.om_files import TensorSpec

    graph = read_om(Path(model)).main

    def spec(name: str, what: str) -> TensorSpec:
        value = graph.value(name)
        shape = value.shape
        if not shape or not all(isinstance(d, int) and d > 0 for d in shape):
            raise UserError(f"The OM's {what} {name!r} has dynamic or unknown dims ({shape})", model,
                            "Convert the model with a static --input_shape for this run.")
        if value.dtype not in _TYPES:
            raise UserError(f"The OM's {what} {name!r} has the type {value.dtype!r}, which Studio cannot feed",
                            model, "Convert the model with a float32, float16 or uint8 input.")
        return TensorSpec(name, tuple(shape), _TYPES[value.dtype])

    if not graph.inputs or not graph.outputs:
        raise UserError("The OM describes no inputs or outputs", model, "Convert the model again with atc.")
    return spec(graph.inputs[0], "input"), [spec(name, "output") for name in graph.outputs]


def _preprocess(request, spec):
    """The preprocessing for the OM's input (a uint8 input, an AIPP model's, takes raw pixels)."""
    from studio.tools.infer.preprocess import make_preprocess, preset_for_input

    preset = preset_for_input(spec.dtype, request.preset, request.mean)
    pre = make_preprocess(spec.shape, request.task, preset, request.resize, request.size, request.bgr,
                          request.layout, request.mean, request.std, input_name=spec.name)
    h, w = (spec.shape[2], spec.shape[3]) if pre.layout == "NCHW" else (spec.shape[1], spec.shape[2])
    if (pre.height, pre.width) != (h, w):
        raise UserError(f"--size {pre.height}x{pre.width} does not fit the OM's input {spec.name!r} "
                        f"{list(spec.shape)} ({h}x{w})", request.model,
                        f"Drop --size, or give --size {h}x{w}; an OM's input size is fixed when it is converted.")
    return pre


def _tool_argv(tool: str, model: str, inputs: str, output: str, device: int) -> list[str]:
    from studio.tools.bench.commands import ais_bench_argv, msame_argv

    if tool == "msame":
        return msame_argv(model, 1, device, [inputs], output)
    return ais_bench_argv(model, 1, 0, device, [inputs], output) + ["--outfmt", "BIN"]


def run_om(request, where: str | None, context, cancel: CancelToken | None = None
           ) -> Generator[Progress, None, tuple[object, dict | None]]:
    """Run the .om of ``request`` over its pictures on ``where`` (None: this computer); the result
    and, on a host, the ``ran_on`` of ``--json`` (host, tool, seconds the tool ran)."""
    from studio.runs.where import target_for_host
    from studio.tools.infer.results import ResultSink, class_names, ground_truth
    from studio.tools.infer.runner import TASKS, list_images

    if request.task is None:
        raise UserError(f"No task given for {request.model.name}", request.model,
                        "Give --task classify, detect or segment: an .om's outputs are only seen after its run.")
    if request.task not in TASKS:
        raise UserError(f"Unknown task {request.task!r}", None, f"Use one of: {', '.join(TASKS)}.")
    if request.tool not in ("msame", "ais_bench"):
        raise UserError(f"An .om runs with msame or ais_bench, not {request.tool!r}", "--tool",
                        "Use --tool msame or --tool ais_bench.")
    if not Path(request.model).is_file():
        raise UserError("Model not found", request.model, "Give the path of an .om file.")
    spec, out_specs = om_specs(request.model)
    pre = _preprocess(request, spec)
    images = list_images(Path(request.images))
    opts = request.options()
    names = class_names(opts.labels)
    ground = ground_truth(opts, names)
    notes = [f"preprocessing: {pre.describe()}"]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="studio-infer-om-") as scratch, \
            target_for_host(context, where) as target:
        run = yield from _run_on_target(target, request, images, pre, spec, Path(scratch), cancel, out_specs)
        ran_on = None if getattr(target, "is_local", True) else \
            {"host": target.where, "tool": request.tool, "run_seconds": run["seconds"]}
        if run["per_picture_note"]:
            notes.append(run["per_picture_note"])
        sink = ResultSink(opts, pre, names, ground, notes)
        yield from _answer_all(sink, images, run, out_specs, request.tool, cancel)
    result = sink.finish(time.perf_counter() - started)
    return result, ran_on


def _run_on_target(target, request, images, pre, spec, scratch: Path, cancel, out_specs=None
                   ) -> Generator[Progress, None, dict]:
    """Preprocess, upload, run the tool, bring the outputs back: what :func:`_answer_all` reads."""
    from studio.targets.transfer.fetch import folder_fetcher
    from studio.tools.bench.on_target import MISSING_FIXES
    from studio.tools.infer.om_files import INPUT_FOLDER, write_inputs
    from studio.tools.infer.runner import load_ahead

    placements: dict[int, object] = {}

    def tensors():
        for index, (_path, loaded) in enumerate(load_ahead(images, pre, cancel)):
            if loaded is not None:
                placements[index] = loaded[2]
            yield index, None if loaded is None else loaded[1]

    archive = scratch / "inputs.tar"
    written = yield from write_inputs(archive, tensors(), spec, len(images), cancel)
    if not written:
        raise UserError("None of the pictures could be read", request.images, "Give PNG, JPEG, BMP or TIFF files.")
    work = target.workdir(f"infer/{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}")
    try:
        model = f"{work}/{Path(request.model).name}"
        yield Progress(None, f"uploading {Path(request.model).name} and {len(written):,} input tensors to "
                             f"{target.where}:{work}")
        argv = _tool_argv(request.tool, model, f"{work}/{INPUT_FOLDER}", f"{work}/out", request.device)
        times: list[float] = []
        tool = ToolRun(request.tool, argv, cwd=work, uploads=[(Path(request.model), model), (archive, "inputs.tar")],
                       before="tar -xf inputs.tar && rm -f inputs.tar", keep=200,
                       show=_shown(request.tool, target.where, len(written), times),
                       missing_fix=MISSING_FIXES.get(request.tool))
        done = yield from run_on_toolkit(tool, target, cancel)
        archive.unlink()
        run = _timings(request.tool, done, times, len(written))
        fetch = folder_fetcher(target)
        if fetch is None:
            run["outputs"] = Path(work) / "out"
            yield from _keep_local(run, scratch)
        else:
            if out_specs:  # sizes are checked there: a wrong-size output is refused before a byte comes
                _check_sizes_there(target, f"{work}/out", out_specs, request.tool, len(written))
            yield Progress(None, f"bringing {len(written):,} pictures' outputs back from {target.where}")
            folder, _size = yield from fetch(f"{work}/out", [], scratch, cancel)
            run["outputs"] = Path(folder)
    finally:
        _remove(target, work)
    run["placements"] = placements
    return run


def _check_sizes_there(target, out: str, specs, tool: str, pictures: int) -> None:
    """The tool's output files listed with their sizes on the target (one round trip) and checked
    against the OM's outputs (:func:`~studio.tools.infer.om_files.check_output_sizes`)."""
    from studio.tools.infer.om_files import check_output_sizes

    status, raw, err = target.run_script(f"cd -- {shlex.quote(out)} && find . -type f -exec stat -c '%s %n' {{}} +",
                                         timeout=120)
    if status != 0:
        raise UserError(f"Cannot list the tool's outputs on {target.where}: {err.decode('utf-8', 'replace').strip()}",
                        f"{target.where}:{out}", "Check the tool's output above.")
    listing = []
    for line in raw.decode("utf-8", "surrogateescape").splitlines():
        size, _, path = line.partition(" ")
        if size.isdigit() and path.startswith("./"):
            listing.append((int(size), path[2:]))
    check_output_sizes(listing, specs, tool, pictures, f"{target.where}:{out}")


def _keep_local(run: dict, scratch: Path) -> Generator[Progress, None, None]:
    """On this computer the outputs are moved out of the work folder before it goes."""
    import shutil

    moved = scratch / "out"
    shutil.move(str(run["outputs"]), moved)
    run["outputs"] = moved
    yield from ()


def _shown(tool: str, where: str, count: int, times: list[float]):
    """The tool's output as progress: msame's per-picture time lines are counted into ``times``
    (a fraction every 16), the other lines shown."""
    from studio.tools.infer.om_files import msame_time

    def show(message: str) -> Progress | None:
        ms = msame_time(message)
        if ms is None:
            return Progress(None, message)
        times.append(ms)
        if len(times) % 16 and len(times) != count:
            return None
        return Progress(len(times) / count, f"{tool} on {where}: {len(times):,} of {count:,} pictures")

    return show


def _timings(tool: str, done, times: list[float], count: int) -> dict:
    """The per-picture times the tool printed (ais_bench prints its mean only: each picture is given it)."""
    from studio.tools.bench.parsers import parse_ais_bench

    note = None
    if tool != "msame":
        try:
            mean = parse_ais_bench("\n".join(done.lines), "", done.where)[0].compute.mean
        except (UserError, AttributeError, IndexError):
            mean = None
        times = [mean] * count if mean is not None else []
        note = "per-picture times: ais_bench prints only its mean, given to every picture"
    return {"times": times, "seconds": done.seconds, "per_picture_note": note}


def _answer_all(sink, images, run: dict, specs, tool: str, cancel) -> Generator[Progress, None, None]:
    """Each picture's outputs (read from the files brought back) into the sink, in order."""
    from studio.tools.infer.om_files import output_folder, read_outputs
    from studio.tools.infer.runner import load_ahead

    folder = output_folder(run["outputs"])
    times, placements = run["times"], run["placements"]
    done = 0
    try:
        for index, (path, loaded) in enumerate(load_ahead(images, None, cancel)):
            if index not in placements or loaded is None:
                sink.failed(path, "not a readable picture")
            else:
                seconds = times[done] / 1000 if done < len(times) and times[done] is not None else None
                sink.add(path, loaded[0], read_outputs(folder, index, specs, tool), placements[index], seconds)
                done += 1
            if index % 16 == 0 or index == len(images) - 1:
                yield Progress((index + 1) / len(images), f"post-processed {index + 1:,} of {len(images):,} pictures")
    finally:
        sink.close()


def _remove(target, work: str) -> None:
    """Remove the run's work folder (its outputs are here). Waited for: a detached ``rm`` dies with
    the session when the command ends right after, and the pictures' tensors would stay there."""
    try:
        target.run_script(f"rm -rf -- {shlex.quote(work)}", timeout=60)
    except Exception:  # the link is gone: the folder stays under the work root
        pass
