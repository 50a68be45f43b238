"""acl.json dump configurations: what will be dumped, and where the files will land.

Keys (CANN runtime ``dump_config_converter.h``): ``dump_path``, ``dump_list`` (per model:
``model_name``, ``layer``...), ``dump_mode`` (input / output / all), ``dump_data`` (tensor /
stats), ``dump_op_switch``, ``dump_step``, ``dump_level``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from studio.errors import UserError


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
        data = json.loads(path.read_text(encoding="utf-8"))
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
