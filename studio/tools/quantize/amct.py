"""Ascend's side of the same quantisation: AMCT's simplified configuration with the rollback set as
its ``skip_layers``, the ``amct_onnx calibration`` command that reads the calibration samples as
binary files, and the ATC command that converts AMCT's deployable model.

AMCT (``amct_onnx calibration``) writes ``<save_path>_deploy_model.onnx`` (for ATC) and
``<save_path>_fake_quant_model.onnx`` (to check accuracy in ONNX Runtime); the simplified
configuration is protobuf text of ``calibration_config_onnx.proto`` (``batch_num``,
``activation_offset``, ``skip_layers``).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import numpy as np

DEFAULT_SOC = "Ascend310P3"


def config_text(skip: list[str], samples: int, asymmetric: bool = True) -> str:
    """The simplified configuration: one batch per sample, activations with an offset (uint8, as ONNX
    Runtime quantised them here), the rollback set skipped."""
    lines = ["# AMCT simplified PTQ configuration (calibration_config_onnx.proto), written by studio quantize",
             f"batch_num: {samples}", f"activation_offset: {'true' if asymmetric else 'false'}"]
    lines += [f'skip_layers: "{name}"' for name in skip]
    return "\n".join(lines) + "\n"


def write_amct(folder: Path, model: Path, skip: list[str], samples: list[dict], soc: str | None = None) -> dict:
    """Write ``amct.cfg``, the samples as ``data/<input>/<i>.bin`` and ``commands.sh`` (AMCT then ATC)
    into ``folder`` (made here; the caller renames it into place); returns ``{name: path}``."""
    folder.mkdir(parents=True, exist_ok=True)
    names = list(samples[0])
    for name in names:
        sub = folder / "data" / _safe(name)
        sub.mkdir(parents=True, exist_ok=True)
        for index, feeds in enumerate(samples):
            np.ascontiguousarray(feeds[name]).tofile(sub / f"{index:05d}.bin")
    (folder / "amct.cfg").write_text(config_text(skip, len(samples)), encoding="utf-8")
    shapes = ";".join(f"{name}:{','.join(str(d) for d in samples[0][name].shape)}" for name in names)
    types = ";".join(str(samples[0][name].dtype) for name in names)
    save = f"amct_out/{model.stem}"
    amct = ["amct_onnx", "calibration", f"--model={model.name}", f"--save_path={save}", f"--input_shape={shapes}",
            "--data_dir=" + ";".join(f"data/{_safe(n)}" for n in names), f"--data_types={types}",
            "--calibration_config=amct.cfg"]
    atc = ["atc", f"--model={save}_deploy_model.onnx", "--framework=5", f"--output={model.stem}_int8",
           f"--input_shape={shapes}", f"--soc_version={soc or DEFAULT_SOC}"]
    note = "" if soc else f"# --soc_version {DEFAULT_SOC}: not given (--soc), the default; change it to your NPU's\n"
    script = ("#!/bin/sh\n# INT8 on Ascend: AMCT calibration with the rollback set skipped, then ATC\nset -e\n"
              "cd \"$(dirname \"$0\")\"\n" + note + " ".join(shlex.quote(a) for a in amct) + "\n"
              + " ".join(shlex.quote(a) for a in atc) + "\n")
    (folder / "commands.sh").write_text(script, encoding="utf-8")
    os.chmod(folder / "commands.sh", 0o755)
    return {"config": folder / "amct.cfg", "commands": folder / "commands.sh", "amct_argv": amct, "atc_argv": atc,
            "deploy_model": f"{save}_deploy_model.onnx", "om": f"{model.stem}_int8.om"}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "input"
