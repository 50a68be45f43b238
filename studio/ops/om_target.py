"""The ``om`` target of ``studio accuracy reduce|precision --host NAME``: each check converts the
model (or a cut of it) with ATC on the host, runs it there with every op dumped (an acl.json
``dump`` section, read by ``ais_bench --acl_json_path``), and reads the NPU dump back.

One check is three round trips on the host's one connection: one upload (a tar of the model, the
input ``.bin`` files, ``keep_dtype.cfg`` and ``acl.json``), one run (``atc`` then the runner, the
dump packed into a tar by the same script), one fetch (that tar). The work folder is made once
per search. ATC keeps the ops of ``--keep_dtype`` in FP32 under ``--precision_mode=force_fp16``.
"""

from __future__ import annotations

import shlex
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.ops.toolkit import ToolRun, run_on_toolkit
from studio.tools.accuracy.fp16_runs import TargetRunner

RUNNER = ["python3", "-m", "ais_bench"]
DUMP_PLACEHOLDER = "DUMP_PATH_ON_THE_HOST"  # the host's inference tool; it reads the dump from acl.json


class OmRunner(TargetRunner):
    """Checks on an OM built by ATC on ``target`` (a :class:`~studio.targets.base.Target`), judged on
    its NPU dump (every op's output), as :class:`~studio.ops.fp16_target.Fp16OnnxRunner`
    is on its ONNX Runtime dump."""

    target = "om"
    judges_inner = True

    def __init__(self, target, soc_version: str = "Ascend310", runner: list[str] | None = None):
        super().__init__()
        self.host, self.soc_version, self.runner = target, soc_version, list(runner or RUNNER)
        self.label = f"OM on {target.where} (ATC + NPU dump)"
        self.round_trips = 0  # uploads, runs and fetches on the host, the work folder's creation included
        self._work: str | None = None

    def _on_target(self, model, feeds, keep):
        """Every op's output from the NPU dump, by the original tensor names."""
        if self._work is None:
            self._work = self.host.workdir(f"accuracy-om/{time.strftime('%Y%m%d-%H%M%S')}")
            self.round_trips += 1
        check = f"{self._work}/check{self.target_runs}"
        with tempfile.TemporaryDirectory(prefix="studio-om-") as tmp:
            tmp = Path(tmp)
            packed = self._pack(tmp, model, feeds, keep, f"{check}/dump")
            script = (f"mkdir -p {shlex.quote(check)} && cd {shlex.quote(check)} && tar xf ../{Path(check).name}.tar"
                      f" && mkdir -p dump && {{ {self.check_commands(feeds, keep)}; }} > run.log 2>&1;"
                      " status=$?; tar cf result.tar run.log dump; exit $status")
            # ATC's and the runner's exit codes are judged here, with their log (it comes back either way)
            run = ToolRun("ATC + NPU dump", ["sh", "-c", script], cwd=self._work, accept=None,
                          uploads=[(packed, f"{check}.tar")], outputs=[(f"{check}/result.tar", tmp / "result.tar")])
            status = run_job(run_on_toolkit(run, self.host)).status
            self.round_trips += 3
            with tarfile.open(tmp / "result.tar") as archive:
                archive.extractall(tmp / "result", filter="data")
            log = (tmp / "result" / "run.log").read_text(errors="replace") if (tmp / "result" / "run.log").exists() else ""
            if status != 0:
                raise UserError(f"ATC or the dump run failed on {self.host.where} (exit {status}):\n"
                                + "\n".join(log.splitlines()[-15:]), f"{self.host.where}:{check}/run.log",
                                "Read the log above; the same commands are in the repro's commands.sh.")
            return _dumped_tensors(model, tmp / "result" / "dump")

    def check_commands(self, feeds: dict[str, np.ndarray], keep) -> str:
        """The shell commands of one check, run in the folder holding model.onnx and inputs/."""
        from studio.tools.convert.atc_command import build_atc_argv
        from studio.tools.convert.options import ConvertOptions

        from studio.tools.accuracy.fp16_onnx import input_shape

        extra = ["--keep_dtype=keep_dtype.cfg"] if keep else []
        atc = build_atc_argv(ConvertOptions(model="model.onnx", output="model", soc_version=self.soc_version,
                                            input_shape=input_shape(feeds), precision_mode="force_fp16",
                                            extra_args=extra))
        files = ",".join(f"inputs/{i}.bin" for i in range(len(feeds)))
        run = [*self.runner, "--model", "model.om", "--input", files, "--output", "out",
               "--acl_json_path", "acl.json"]
        return f"{shlex.join(atc)} && {shlex.join(run)}"

    def commands(self, flags: str, feeds: dict[str, np.ndarray]) -> str:
        """The shell lines that reproduce a check: ATC and the dump run on the host, then the
        comparison here (``acl.json``'s ``dump_path`` is set to the host's folder first)."""
        return (f"# on the host (after the CANN set_env.sh), in a copy of this folder:\n"
                f"mkdir -p dump && sed -i \"s|{DUMP_PLACEHOLDER}|$PWD/dump|\" acl.json\n"
                f"{self.check_commands(feeds, ()).replace(' && ', chr(10))}\n"
                f"# back here, with the host's dump folder copied to ./npu_dump:\n"
                f"studio dump model.onnx -o fp32 {flags}\n"
                "studio compare fp32 npu_dump\n")

    def write_files(self, out_dir: Path, feeds: dict[str, np.ndarray]) -> None:
        """The files :meth:`commands` reads besides model.onnx: inputs/N.bin and acl.json."""
        from studio.tools.accuracy.acl_config import build_acl_json, write_acl_json

        for i, array in enumerate(feeds.values()):
            np.ascontiguousarray(array).tofile(out_dir / "inputs" / f"{i}.bin")
        write_acl_json(out_dir / "acl.json", build_acl_json(DUMP_PLACEHOLDER, [("model", [])]))

    def _pack(self, tmp: Path, model, feeds: dict[str, np.ndarray], keep, dump_path: str) -> Path:
        """model.onnx, inputs/N.bin (graph input order), keep_dtype.cfg and acl.json in one tar."""
        import onnx

        from studio.tools.accuracy.acl_config import build_acl_json, write_acl_json

        folder = tmp / "in"
        (folder / "inputs").mkdir(parents=True)
        onnx.save(model, folder / "model.onnx")
        for i, array in enumerate(feeds.values()):
            np.ascontiguousarray(array).tofile(folder / "inputs" / f"{i}.bin")
        (folder / "keep_dtype.cfg").write_text("".join(f"{name}\n" for name in sorted(keep)), encoding="utf-8")
        write_acl_json(folder / "acl.json", build_acl_json(dump_path, [("model", [])]))
        packed = tmp / "in.tar"
        with tarfile.open(packed, "w") as archive:
            for path in sorted(folder.rglob("*")):
                archive.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
        return packed


def _dumped_tensors(model, folder: Path) -> dict[str, np.ndarray]:
    """The NPU dump's op outputs under the ONNX tensor names (op name + output index)."""
    from studio.tools.accuracy.dumpset import read_npu_dump_set

    outputs = {node.name: list(node.output) for node in model.graph.node}
    dump = read_npu_dump_set(folder)
    tensors = {}
    for entry in dump.entries:
        names = outputs.get(entry.op_name)
        if entry.kind == "output" and names and entry.index < len(names) and names[entry.index]:
            tensors[names[entry.index]] = dump.load(entry)
    return tensors
