"""The tensors of an msprobe tensor dump: ``dump_tensor_data/<data_name>`` beside ``dump.json``.

PyTorch dumps hold ``.pt`` files (read by :mod:`studio.tools.accuracy.pt_tensor`, without torch
and without running their pickle), MindSpore dumps ``.npy`` files (read with pickles refused).
Each tensor is read as msprobe's compare reads it — bfloat16 as float32, then squeezed — one at
a time, so a comparison holds at most one pair in memory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.tools.accuracy.pt_tensor import read_pt_tensor

TENSOR_DIR = "dump_tensor_data"


def tensor_path(dump_folder: Path, data_name: str) -> Path:
    """Where msprobe's compare looks for a tensor: ``dump_tensor_data/`` beside dump.json."""
    name = Path(data_name)
    if name.is_absolute() or ".." in name.parts:
        raise UserError(f"A data_name that leaves the dump folder ({data_name})", dump_folder / "dump.json",
                        "Give the dump.json msprobe wrote; its data_name values are plain file names.")
    return dump_folder / TENSOR_DIR / name


def read_dumped_tensor(path: Path) -> np.ndarray:
    """One dumped tensor as msprobe's compare sees it (bfloat16 as float32, squeezed)."""
    if path.suffix == ".pt":
        array = read_pt_tensor(path)
    elif path.suffix == ".npy":
        array = _read_npy(path)
    else:
        raise UserError(f"Not a tensor file msprobe writes ({path.suffix or 'no extension'})", path,
                        "msprobe's tensor dumps hold .pt (PyTorch) or .npy (MindSpore) files.")
    return np.squeeze(array)


def _read_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError as exc:
        raise UserError("Tensor file not found", path, "Give the dump folder msprobe wrote, with its "
                        "dump_tensor_data/ beside dump.json.") from exc
    except (ValueError, EOFError, OSError) as exc:
        reason = "it holds pickled objects, which Studio does not load" if "allow_pickle" in str(exc) \
            else f"truncated or damaged: {exc}"
        raise UserError(f"Cannot read the .npy tensor ({reason})", path,
                        "The dump was cut short (disk full, job killed); dump again.") from exc
