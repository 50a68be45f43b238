"""Dump an app's ops on an Ascend host: acl.json with a dump_path on the host, the run
configuration run, the newest dump tree brought back (``studio dump --host NAME --config RUN
--model MODEL.om -o DIR``); with ``--reference MODEL.onnx`` the original model is also dumped here
on the same arrays and the two compared (journey 3 in one command)."""

from __future__ import annotations

import argparse
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from studio.core import options
from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.core.options import option
from studio.ops.msprof import run_config
from studio.core.serial import to_json


HOST_GROUP = "on an Ascend host"


def _path(value, _read=None) -> Path | None:
    return Path(value) if value is not None else None


@dataclass
class Request:
    """Dump the configuration ``config`` (it loads ``model``, an .om) on a host into ``output``.
    Each field is declared once with its ``studio dump`` option (:mod:`studio.core.options`); the
    host itself is the command's ``--host``."""

    COMMAND = ("dump",)

    output: Path = option("-o", "--output", type=Path, metavar="DIR", parse=_path, help="folder to write into")
    config: str | None = option("--config", default=None, metavar="RUN", group=HOST_GROUP,
                                help="the run configuration that runs the app")
    model: Path | None = option("--model", default=None, type=Path, metavar="MODEL.om", group=HOST_GROUP,
                                parse=_path, help="the .om the app loads (names dump_list)")
    workspace: Path | None = option("--workspace", default=None, type=Path, metavar="DIR", group=HOST_GROUP,
                                    parse=_path, help="workspace of --config (default: around .)")
    layers: list[str] = option("--layer", default_factory=list, action="append", metavar="OP", group=HOST_GROUP,
                               parse=lambda values, _read: list(values or []), help="dump only these ops (repeat)")
    mode: str = option("--mode", default="output", choices=["output", "input", "all"], group=HOST_GROUP,
                       help="dump_mode")
    op_switch: str = option("--op-switch", default="off", choices=["on", "off"], group=HOST_GROUP,
                            help="dump_op_switch")
    # [NAME=]FILE.npy, uploaded beside the app. --input as on every command (the local dump's
    # --input NAME=FILE.npy is the same option); --npy is its older spelling.
    npy: list[str] = option("--input", old=("--npy",), default_factory=list, action="append",
                            metavar="[NAME=]FILE.npy", group=HOST_GROUP, parse=lambda values, _read: list(values or []),
                            help="input arrays to upload beside the app (repeat); NAME = the ONNX input for "
                                 "--reference")
    reference: Path | None = option("--reference", default=None, type=Path, metavar="MODEL.onnx", group=HOST_GROUP,
                                    parse=_path, help="also dump this original model here with ONNX Runtime on the "
                                                      "same --input arrays and compare (journey 3 in one command)")

    def to_argv(self) -> list[str]:
        """The ``studio dump`` arguments of this request (the host is ``--host``)."""
        return options.to_argv(self)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Request:
        """The request the command line's parsed arguments describe."""
        return options.from_args(cls, args)

    def arrays(self) -> dict[str, Path]:
        """The ``--input`` arrays by name (the ONNX input for ``--reference``; the file's stem without one)."""
        arrays = {}
        for item in self.npy:
            key, sep, file = item.partition("=")
            arrays[key if sep else Path(item).stem] = Path(file if sep else item)
        return arrays


@dataclass
class Result:
    """The dump brought back (:class:`~studio.ops.npu_dump_host.HostDump`) and, with a
    reference, the comparison (:class:`~studio.ops.npu_dump_host.HostComparison`)."""

    JSON_INDENT = 1

    dump: object
    name: str
    both: object = None
    csv: Path | None = None

    def to_json(self) -> dict:
        d = self.dump
        data = {"folder": str(d.folder), "host": d.where, "dump": d.tree.path, "files": len(d.tree.files),
                "bytes": d.bytes, "acl_json": d.acl_json}
        if self.both is not None:
            data.update(cpu_dump=str(self.both.cpu_dump), compare=to_json(self.both.result), csv=str(self.csv),
                        mapping=str(self.both.mapping) if self.both.mapping else None)
        return data

    def text(self) -> str:
        d = self.dump
        lines = [f"dumped {len(d.tree.files)} op files of {self.name} on {d.where} into {d.folder}"]
        if self.both is not None:
            lines += [f"reference dump (ONNX Runtime here): {self.both.cpu_dump}", str(self.both.result),
                      f"wrote {self.csv}"]
        return "\n".join(lines)


def prepare(request: Request, where: str | None):
    """The run configuration ``request`` dumps with on ``where`` (checked before anything runs)."""
    if not request.config:
        raise UserError("Dumping on a host runs a run configuration", "--config", "Add --config RUN.")
    if request.model is None:
        raise UserError("Which model does the app load?", "--model",
                        "Add --model MODEL.om (its name goes into dump_list).")
    return run_config(request.config, request.workspace, [], where)


def run(request: Request, where: str | None, context, cancel: CancelToken | None = None, config=None
        ) -> Generator[Progress, None, Result]:
    """Dump on the host ``where``; ``config`` is the request's configuration when the caller
    already resolved it (and uploaded its deployment first)."""
    from studio.runs.where import target_for_config
    from studio.tools.accuracy.acl_config import om_dump_entry
    from studio.ops.npu_dump_host import dump_and_compare, dump_on_host
    from studio.targets.transfer.fetch import folder_fetcher

    config = config or prepare(request, where)
    layers = list(request.layers)
    model = Path(request.model)
    if model.is_file():
        from studio.tools.graph.om_reader import read_om

        name, layers = om_dump_entry(read_om(model), model.name, layers)
    else:  # the .om lives only on the host: its file name is what dump_list needs
        name = model.stem
    arrays = request.arrays()
    with target_for_config(context, config) as target:
        if request.reference is None:
            result = yield from dump_on_host(target, config, name, request.output, layers, request.mode,
                                             request.op_switch, list(arrays.values()), cancel=cancel,
                                             fetch=folder_fetcher(target))
            return Result(result, name)
        both = yield from dump_and_compare(target, config, name, request.reference, request.output, arrays, layers,
                                           request.mode, converted=model, fetch=folder_fetcher(target), cancel=cancel)
    csv = Path(request.output) / "compare.csv"
    both.result.write_csv(csv)
    return Result(both.host, name, both, csv)
