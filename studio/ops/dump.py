"""Dump every op output of an ONNX model (FP32 or FP16 simulation), here or with Studio's engine on
a host (``studio dump MODEL.onnx -o DIR [--host NAME]``; the FP16 check and the cross-check are two
of these and a comparison)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.core.options import option, restate
from studio.ops.engine import RanOn, is_here, json_with_ran_on, run_on_engine, text_with_ran_on
from studio.ops.inputs import ModelRun, load_arrays


@dataclass
class Request(ModelRun):
    """One dump of ``model`` into the folder ``output``."""

    COMMAND = ("dump",)

    # `studio dump convert FILE` shares the positional words: the model is the first of them.
    model: Path = restate(ModelRun, "model", dest="paths", nargs="*", type=None, metavar="MODEL | convert FILE",
                          help="an ONNX model, or `convert` and an Ascend NPU dump file",
                          parse=lambda paths, _read: Path(paths[0]))
    output: Path | None = restate(ModelRun, "output", required=True, help="folder to write into")
    inputs: dict[str, Path] = restate(ModelRun, "inputs", metavar="NAME=FILE.npy",
                                      help="data for a model input (repeatable); other inputs get seeded random "
                                           "data. With --host and --config: [NAME=]FILE.npy arrays uploaded beside "
                                           "the app (NAME: the ONNX input for --reference)")
    fp16_sim: bool = option("--fp16-sim", default=False, action="store_true",
                            help="simulate an FP16 device: weights and every op output rounded through FP16")


@dataclass
class Result:
    """What was dumped where (the ``studio dump --json`` keys), and on a host, where it ran."""

    dir: Path
    mode: str
    model: str
    tensors: int
    inputs: dict = field(default_factory=dict)
    fp16_sim_unrounded: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    subgraphs: dict = field(default_factory=dict)  # ops inside sub-graphs that ran but are not dumped
    ran_on: RanOn | None = None

    def to_json(self) -> dict:
        data = {"dir": str(self.dir), "mode": self.mode, "model": self.model, "tensors": self.tensors,
                "inputs": self.inputs, "fp16_sim_unrounded": self.fp16_sim_unrounded, "warnings": self.warnings}
        return json_with_ran_on(data, self.ran_on)

    def text(self, model: Path) -> str:
        from studio.tools.accuracy.dumpset import MODE_LABELS

        lines = [f"{MODE_LABELS[self.mode]}", f"dumped {self.tensors} tensors of {model} to {self.dir}"]
        for name, info in self.inputs.items():
            shape = f"{info['dtype']} {info['shape']} " if "shape" in info else ""
            lines.append(f"  input {name}: {info['source']}" + (f" ({shape.strip()})" if shape else ""))
        if self.subgraphs.get("ops"):
            lines.append(f"  note: {self.subgraphs['ops']} op(s) inside the sub-graphs of "
                         f"{', '.join(self.subgraphs.get('nodes', [])[:5])} ran "
                         "but are not dumped (ONNX Runtime returns top-level tensors only)")
        lines += [f"  warning: {warning}" for warning in self.warnings]
        if self.fp16_sim_unrounded:
            unrounded = self.fp16_sim_unrounded
            lines.append(f"  note: {len(unrounded)} op output(s) of unknown type were not rounded to FP16: "
                         + ", ".join(unrounded[:5]) + (" ..." if len(unrounded) > 5 else ""))
        return text_with_ran_on(lines, self.ran_on)


def run(request: Request, where: str | None = None, context=None, cancel: CancelToken | None = None
        ) -> Generator[Progress, None, Result]:
    """Dump as ``request`` says, on this computer or on the host ``where``."""
    from studio.tools.accuracy.dumpset import load_dump

    if is_here(where):
        from studio.tools.accuracy.local_dump import dump_model

        request.use_providers()
        out = yield from dump_model(request.model, request.output, load_arrays(request.inputs), seed=request.seed,
                                    fp16_sim=request.fp16_sim, cancel=cancel, shapes=request.shapes)
        dump = load_dump(out)
        return Result(Path(out), dump.mode, dump.model, len(dump.entries), dump.info.get("inputs", {}),
                      dump.info.get("fp16_sim_unrounded", []), dump.info.get("warnings", []),
                      dump.info.get("subgraphs") or {})
    host = yield from run_on_engine(request, where, context, cancel, request.engine, lock="dump run")
    data = host.data
    dump = load_dump(Path(data["dir"]))  # the fetched folder: what the text adds to the JSON
    inputs = {name: {**info, "source": host.localize(str(info.get("source", "")))}
              for name, info in (data.get("inputs") or {}).items()}
    return Result(Path(data["dir"]), data["mode"], data["model"], int(data["tensors"]), inputs,
                  data.get("fp16_sim_unrounded", []), [host.localize(w) for w in data.get("warnings", [])],
                  dump.info.get("subgraphs") or {}, host.ran_on)
