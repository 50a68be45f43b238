"""acl.json dump configurations: what will be dumped, and where the files will land.

Keys (CANN runtime ``dump_config_converter.h``): ``dump_path``, ``dump_list`` (per model:
``model_name``, ``layer``...), ``dump_mode`` (input / output / all), ``dump_data`` (tensor /
stats), ``dump_op_switch``, ``dump_step``, ``dump_level``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.formats import ACCURACY, FileFormat, json_object_with, path_only
from studio.core.safe_read import SETTINGS_CAP, load_json


@dataclass
class AclDumpConfig:
    """The dump section of one acl.json."""

    path: Path
    dump_path: str
    mode: str = "output"
    data: str = "tensor"
    models: list[str] = field(default_factory=list)
    layers: dict[str, list[str]] = field(default_factory=dict)
    op_switch: str = "off"
    step: str = ""

    def layout(self) -> str:
        """Where the NPU writes the files, for each model (per ascend_formats.md §2.2)."""
        models = self.models or ["{model_name}"]
        names = "{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}" + (".csv" if self.data == "stats" else "")
        return "\n".join(f"{self.dump_path}/{{YYYYMMDDhhmmss}}/{{device_id}}/{m}/{{model_id}}/{{data_index}}/{names}"
                         for m in models)

    def describe(self) -> str:
        """A few lines a user can read."""
        what = {"output": "op outputs", "input": "op inputs", "all": "op inputs and outputs"}.get(self.mode, self.mode)
        models = ", ".join(self.models) or "all models"
        layers = "; ".join(f"{m}: {len(v)} layer(s)" for m, v in self.layers.items() if v)
        lines = [f"dumps {what} ({self.data}) of {models}" + (f" [{layers}]" if layers else ""),
                 f"dump_path: {self.dump_path}", "files:", self.layout()]
        if self.step:
            lines.insert(1, f"steps: {self.step}")
        return "\n".join(lines)


def read_acl_config(path: Path | str) -> AclDumpConfig:
    """Parse the ``dump`` section of an acl.json; UserError when it has none or is malformed."""
    path = Path(path)
    try:
        data = load_json(path, "acl.json", SETTINGS_CAP)
    except (OSError, ValueError) as exc:
        raise UserError(f"acl.json is not valid JSON ({exc})", path, "Fix the JSON syntax.") from exc
    dump = data.get("dump") if isinstance(data, dict) else None
    if not isinstance(dump, dict):
        raise UserError("acl.json has no \"dump\" section", path,
                        'Add {"dump": {"dump_path": "...", "dump_list": [{"model_name": "..."}]}}.')
    if not dump.get("dump_path"):
        raise UserError("acl.json dump section has no dump_path", f"{path}, field dump.dump_path",
                        "Set dump_path to a folder on the device (absolute or relative).")
    models, layers = [], {}
    for item in dump.get("dump_list", []) or []:
        if isinstance(item, dict) and item.get("model_name"):
            models.append(str(item["model_name"]))
            layers[str(item["model_name"])] = [str(v) for v in item.get("layer", []) or []]
    return AclDumpConfig(path=path, dump_path=str(dump["dump_path"]), mode=str(dump.get("dump_mode", "output")),
                         data=str(dump.get("dump_data", "tensor")), models=models, layers=layers,
                         op_switch=str(dump.get("dump_op_switch", "off")), step=str(dump.get("dump_step", "")))


DUMP_MODES = ("output", "input", "all")
_SKIP_LAYER_TYPES = {"Data", "NetOutput", "Const", "Constant"}


def build_acl_json(dump_path: str, models: list[tuple[str, list[str]]] | None = None, mode: str = "output",
                   op_switch: str = "off", data: str = "tensor") -> dict:
    """The ``{"dump": {...}}`` document for aclInit / aclmdlSetDump.

    ``dump_path`` is written as given: a folder on the machine that runs the app (the host), which
    must exist before the run. ``models`` are (model_name, layers) pairs; no layers = every op.
    """
    if not dump_path:
        raise UserError("No dump path given", "dump_path", "Give a folder on the host, e.g. /home/user/dump.")
    if mode not in DUMP_MODES:
        raise UserError(f"dump_mode {mode!r} is not one of {', '.join(DUMP_MODES)}", "dump_mode",
                        "Use output (default), input or all.")
    if op_switch not in ("on", "off"):
        raise UserError(f"dump_op_switch {op_switch!r} must be on or off", "dump_op_switch", "Use on or off.")
    if data not in ("tensor", "stats"):
        raise UserError(f"dump_data {data!r} must be tensor or stats", "dump_data", "Use tensor or stats.")
    dump_list = []
    for name, layers in models or []:
        entry: dict = {"model_name": name}
        if layers:
            entry["layer"] = list(layers)
        dump_list.append(entry)
    return {"dump": {"dump_list": dump_list, "dump_path": dump_path, "dump_mode": mode,
                     "dump_op_switch": op_switch, "dump_data": data}}


def write_acl_json(path: Path | str, document: dict) -> Path:
    """Write an acl.json (atomically: a reader never sees half a file)."""
    import os

    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(document, indent=4) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def om_dump_entry(model, file_name: str, layers: list[str] | None = None) -> tuple[str, list[str]]:
    """(model_name, layers) for the dump_list, from an OM model read by the graph reader.

    ``model`` is what ``studio.tools.graph.om_reader.read_om`` returns (duck-typed: ``path`` and
    ``graphs`` with ``nodes`` having ``name``/``type``). The name is the .om file's stem: for a
    model loaded from a file, CANN matches ``model_name`` against the file name without suffix.
    Requested layers must exist in the model; unknown ones are a UserError naming them.
    """
    name = Path(file_name).stem
    if not layers:
        return name, []
    ops = {node.name for graph in model.graphs for node in graph.nodes if node.type not in _SKIP_LAYER_TYPES}
    missing = [layer for layer in layers if layer not in ops]
    if missing:
        import difflib

        hints = {m: difflib.get_close_matches(m, sorted(ops), n=1) for m in missing}
        hint = "; ".join(f"{m} -> {h[0]}?" for m, h in hints.items() if h)
        raise UserError(f"The model has no op named {', '.join(missing)}", file_name,
                        "Pick layers from the model's op names" + (f" ({hint})." if hint else "."))
    return name, list(layers)


def match_acl_json(path: Path, head: bytes) -> bool:
    """An acl.json with a dump section (``dump``, ``dump_path`` or ``dump_list``)."""
    return json_object_with(head, r'"(dump|dump_path|dump_list)"\s*:')


ACL_JSON = FileFormat("acl_json", "acl.json (dump / profiling configuration)", ACCURACY, match_acl_json,
                      path_only(read_acl_config))
