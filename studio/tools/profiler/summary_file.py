"""``studio_profile.json``: the summary ``studio profile run`` (and ``studio bench -o``) writes beside a
trace, read back with every key checked.

The profiler takes its facts and model from it, the advisor its latency, iterations and input
shapes. A hand-edited or damaged file (``[]``, ``"facts": 5``, ``"iterations": "abc"``, ``1e999``)
is a UserError naming the file and the key, never a traceback deep in a reader.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from studio.core.errors import UserError
from studio.core.formats import PROFILER, FileFormat
from studio.core.safe_read import load_json

SUMMARY_NAME = "studio_profile.json"
_FIX = "Run `studio profile run` again to write it, or correct that key."


def read_summary(folder: Path) -> dict[str, Any]:
    """The checked summary in ``folder`` ({} when there is none)."""
    path = Path(folder) / SUMMARY_NAME
    if not path.is_file():
        return {}
    try:
        data = load_json(path, "profile summary", errors="replace")
    except OSError as exc:
        raise UserError(f"Cannot read the profile summary: {exc.strerror or exc}", path,
                        "Check the file's permissions.") from exc
    except (ValueError, RecursionError) as exc:
        raise UserError(f"The profile summary is not valid JSON: {exc}"[:300], path, _FIX) from None
    check_summary(data, path)
    return data


def check_summary(data: Any, path: Path | str) -> None:
    """A UserError for the first key of a summary that does not hold what readers expect."""
    if not isinstance(data, dict):
        raise UserError(f"The profile summary holds {_kind(data)}, not a JSON object", path, _FIX)

    def bad(key: str, expected: str) -> UserError:
        return UserError(f"{key} in the profile summary is {_short(data_at(key))}; expected {expected}",
                         f"{path}: key {key}", _FIX)

    def data_at(key: str) -> Any:
        value: Any = data
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    if "model" in data and not isinstance(data["model"], str):
        raise bad("model", "the model's path as text")
    for key in ("iterations", "warmup"):
        if key in data and not (_whole(data[key]) and data[key] >= 0):
            raise bad(key, "a whole number of 0 or more")
    if "throughput_per_s" in data and data["throughput_per_s"] is not None and not _finite(data["throughput_per_s"]):
        raise bad("throughput_per_s", "a finite number")
    for key in ("latency_ms", "facts", "inputs", "benchmark"):
        if key in data and not isinstance(data[key], dict):
            raise bad(key, "a JSON object")
    for name, value in data.get("latency_ms", {}).items():
        if not _finite(value):
            raise bad(f"latency_ms.{name}", "a finite number of milliseconds")
    if "latencies_ms" in data and not (isinstance(data["latencies_ms"], list)
                                       and all(_finite(v) for v in data["latencies_ms"])):
        raise bad("latencies_ms", "a list of finite numbers")
    for name, value in data.get("facts", {}).items():
        if isinstance(value, (dict, list)):
            raise bad(f"facts.{name}", "text or a number")
    for name, used in data.get("inputs", {}).items():
        if not isinstance(used, dict):
            raise bad(f"inputs.{name}", "a JSON object with shape, dtype and source")
        shape = used.get("shape", [])
        if not isinstance(shape, list) or not all(_whole(d) and d >= 0 for d in shape):
            raise bad(f"inputs.{name}.shape", "a list of whole numbers")
        if not isinstance(used.get("source", ""), str):
            raise bad(f"inputs.{name}.source", "text")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _kind(value: Any) -> str:
    return {list: "a list", str: "text", type(None): "null"}.get(type(value), f"a {type(value).__name__}")


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def match_studio_profile(path: Path) -> bool:
    """A folder written by ``studio profile run``: a trace, summaries and studio_profile.json."""
    return (path / SUMMARY_NAME).is_file()


def read_studio_profile(path: Path, cancel=None):
    """Job: the folder's trace and tables, with the summary's facts and model attached."""
    from studio.tools.profiler.msprof_reader import read_profile_folder
    from studio.tools.profiler.ort_reader import strip_kernel_suffix

    trace = yield from read_profile_folder(path, cancel)
    strip_kernel_suffix(trace)
    summary = read_summary(path)
    for key, value in summary.get("facts", {}).items():
        trace.facts[key] = str(value)
    model = summary.get("model")
    if model:
        trace.model_path = str((path / model).resolve()) if not Path(model).is_absolute() else model
    return trace


STUDIO_PROFILE = FileFormat("studio_profile", "Studio local profile (ONNX Runtime run)", PROFILER,
                            match_studio_profile, read_studio_profile, folder=True)
