"""Dump a model's tensors on the NPU where a Target says, and bring the dump tree back.

Steps (journey 3): make a symlink-free dump folder on the host, write an acl.json whose
``dump_path`` is that folder (MindStudio could only set a local one), upload it beside the app
(the configuration's working folder, where the app's ``aclInit("acl.json")`` finds it), upload the
input .npy files the app should read, run the configuration, find the newest
``{dump_path}/{timestamp}/{device}/{model}/{model_id}/{index}/`` tree and download it into
``out`` (under a temporary name first; nothing half-written is left behind). The uploads and the
run are one :func:`~studio.ops.toolkit.run_on_toolkit` in the working folder; an app's failure is
told as the app's (its exit code, its last lines, where the CANN logs are).
"""

from __future__ import annotations

import secrets
import shlex
import shutil
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.ops.toolkit import ToolOutcome, ToolRun, list_files, run_on_toolkit
from studio.runs.config import RunConfig
from studio.targets.transfer.fetch import fetcher_for
from studio.tools.accuracy.acl_config import build_acl_json, write_acl_json
from studio.tools.accuracy.dump_tree import DumpTree, find_newest_dump

ACL_JSON = "acl.json"


@dataclass
class HostDump:
    """A dump made on a host and its local copy."""

    folder: Path  # local copy of the {index} folder (the op files)
    tree: DumpTree
    where: str
    acl_json: str  # where acl.json was written on the host
    output: list[str] = field(default_factory=list)
    bytes: int = 0


def dump_on_host(target, config: RunConfig, model_name: str, out: Path, layers: list[str] | None = None,
                 mode: str = "output", op_switch: str = "off", inputs: list[Path] | None = None,
                 acl_name: str = ACL_JSON, cancel: CancelToken | None = None,
                 fetch=None) -> Generator[Progress, None, HostDump]:
    """Run ``config`` on ``target`` with a dump acl.json beside it; return the downloaded tree
    (``out/npu_dump/{time}/{device}/{model}/{model_id}/{index}/``). ``fetch`` as in
    :func:`studio.targets.transfer.fetch.download_folder` (the default)."""
    config.validate()
    if not config.workdir:
        raise UserError("Dumping on a host needs the run configuration's working folder", config.name,
                        "Set it to the folder the app runs in (where it reads acl.json).")
    out = Path(out)
    final = out / "npu_dump"
    if final.exists():
        raise UserError("The output folder already holds an npu_dump folder", final,
                        "Choose another -o folder, or remove it.")
    setup = config.env_setup() or target.toolkit_setup()
    yield Progress(0.0, f"preparing the dump folder on {target.where}")
    dump_path = target.workdir(f"dumps/{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}")
    try:
        cwd = target.realpath(config.workdir)
    except Exception as exc:  # noqa: BLE001 - the user's to fix
        raise UserError(f"The working folder does not exist on {target.where}", config.workdir,
                        "Upload the deployment first, or fix the run configuration.") from exc
    document = build_acl_json(dump_path, [(model_name, layers or [])], mode=mode, op_switch=op_switch)
    argv = config.argv()

    def failed(done: ToolOutcome) -> UserError:
        tail = "\n".join(done.lines[-6:])
        return UserError(f"The app failed on {target.where} with exit code {done.status}"
                         + (f":\n{tail}" if tail else ""), f"{target.where}: cd {cwd} && {config.command}",
                         "Read its output above; the CANN logs are under ~/ascend/log/debug/plog/ on the host.")

    with tempfile.TemporaryDirectory(prefix="studio-acl-") as tmp:
        # acl.json and the input arrays go beside the app, where its aclInit("acl.json") and it read them
        uploads = [(write_acl_json(Path(tmp) / acl_name, document), acl_name),
                   *((Path(array), Path(array).name) for array in inputs or [])]
        run = ToolRun(config.name, argv, cwd=cwd, uploads=uploads, env_setup=setup, explain=failed,
                      shown=f"cd {shlex.quote(cwd)} && {shlex.join(argv)}")
        lines = (yield from run_on_toolkit(run, target, cancel)).lines
    remote_json = f"{cwd}/{acl_name}"
    listing = list_files(target, dump_path, timeout=120)
    tree = find_newest_dump(listing, dump_path, model_name)
    yield Progress(0.7, f"downloading {len(tree.files)} dump files from {tree.relative}")
    parent = final / tree.relative.rsplit("/", 1)[0]  # {time}/{device}/{model}/{model_id}; the index comes
    try:
        folder, size = yield from fetcher_for(target, fetch)(tree.path, tree.files, parent, cancel)
        (final / "acl.json").write_text(_json(document))  # what the run used, kept with its dumps
    except BaseException:
        shutil.rmtree(final, ignore_errors=True)  # nothing half-made is left behind
        raise
    return HostDump(folder, tree, target.where, remote_json, lines, size)


def _json(document: dict) -> str:
    import json

    return json.dumps(document, indent=4) + "\n"


@dataclass
class HostComparison:
    """Journey 3 in one result: the NPU dump, the CPU dump of the original model, their comparison."""

    host: HostDump
    cpu_dump: Path
    result: object  # studio.tools.accuracy.compare.CompareResult
    mapping: Path | None = None


def dump_and_compare(target, config: RunConfig, model_name: str, reference: Path, out: Path,
                     inputs: dict[str, Path], layers: list[str] | None = None, mode: str = "output",
                     converted: Path | None = None, thresholds=None, fetch=None,
                     cancel: CancelToken | None = None) -> Generator[Progress, None, HostComparison]:
    """Dump on the host with the given input arrays (uploaded beside the app), dump the original
    ``reference`` model here with ONNX Runtime on the same arrays, and compare the two op by op
    (with the converter's node mapping when ``converted`` has a report beside it)."""
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.dumpset import load_npy
    from studio.tools.accuracy.local_dump import dump_model
    from studio.tools.accuracy.matching import find_converter_report, load_mapping

    arrays = {name: load_npy(Path(path)) for name, path in inputs.items()}
    host = yield from dump_on_host(target, config, model_name, out, layers, mode, inputs=list(inputs.values()),
                                   cancel=cancel, fetch=fetch)
    yield Progress(None, f"dumping {Path(reference).name} here with ONNX Runtime")
    cpu = yield from dump_model(reference, Path(out) / "cpu_dump", arrays, cancel=cancel)
    report = None
    for candidate in (converted, reference):
        if candidate is not None and report is None:
            report = find_converter_report(candidate)
    mapping = load_mapping(report) if report else None
    result = yield from compare_dumps(cpu, host.folder, mapping=mapping, thresholds=thresholds, cancel=cancel)
    return HostComparison(host, Path(cpu), result, report)
