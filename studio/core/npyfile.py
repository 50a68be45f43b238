""".npy files from users and dumps: read safely, with a UserError for anything wrong.

``np.load`` trusts the header: a shape of 10^12 elements in a 100-byte file asks for terabytes
(MemoryError) and a negative dim fails deep inside NumPy. The header is checked against the
file's size first, so a corrupt or truncated file ends in a message, never a traceback.
"""

from __future__ import annotations

import tokenize
from pathlib import Path
from typing import TYPE_CHECKING

from studio.core.errors import UserError

if TYPE_CHECKING:
    import numpy as np


def load_npy(path: Path | str, mmap: bool = False, what: str = "tensor", text: bool = False) -> np.ndarray:
    """The array in ``path`` (``mmap``: mapped read-only), after checking its header fits the file.

    ``text``: the file is data for a model input, which may take strings; a numpy ``object``
    array (how ONNX Runtime takes a string tensor) is then read too, through an unpickler that
    builds nothing but the array and its ``str``/``bytes`` elements (:func:`_load_text_array`).
    """
    import numpy as np
    from numpy.lib import format as npformat

    path = Path(path)
    fix = "The file is truncated or corrupt; write it again (np.save)."
    if path.exists() and not path.is_dir() and not path.is_file():
        # a FIFO or device would block open() or read forever
        raise UserError(f"Expected a .npy {what} file, got a special file (FIFO, socket or device)", path,
                        "Give a regular .npy file.")
    try:
        with open(path, "rb") as handle:
            version = npformat.read_magic(handle)
            if version == (1, 0):
                shape, _fortran, dtype = npformat.read_array_header_1_0(handle)
            elif version in ((2, 0), (3, 0)):
                shape, _fortran, dtype = npformat.read_array_header_2_0(handle)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            offset = handle.tell()
            size = path.stat().st_size
    except FileNotFoundError as exc:
        raise UserError(f"The {what} file is missing", path, "Check the path (a dump folder may be incomplete).") from exc
    except IsADirectoryError as exc:
        raise UserError(f"Expected a .npy {what} file, got a folder", path, "Give the .npy file itself.") from exc
    except (ValueError, OSError, EOFError, SyntaxError, TypeError, tokenize.TokenError) as exc:
        # NumPy parses the header as a Python literal: a damaged one fails in the tokenizer
        raise UserError(f"Not a readable .npy file ({exc})", path, fix) from exc
    if dtype.hasobject:
        if text and dtype.kind == "O":
            return _load_text_array(path, offset, what)
        raise UserError("The .npy file holds Python objects, which Studio does not load", path,
                        "Save a numeric array (np.save with a numeric dtype)"
                        + (", or text as a numpy string array (np.save(FILE, array.astype(str)))." if text else "."))
    count = 1
    for dim in shape:
        count *= int(dim)
    needed = count * dtype.itemsize
    if needed > size - offset:
        raise UserError(f"The .npy header promises shape {tuple(shape)} of {dtype} ({needed:,} bytes) but the "
                        f"file holds {max(size - offset, 0):,} bytes of data", path, fix)
    try:
        return np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except MemoryError as exc:
        raise UserError(f"Not enough memory to load {needed:,} bytes", path, "Free memory or use a smaller tensor.") from exc
    except (ValueError, OSError, EOFError) as exc:
        raise UserError(f"Not a readable .npy file ({exc})", path, fix) from exc


# What numpy's pickle of an object array names, and nothing else: no other callable can run.
_ARRAY_GLOBALS = {("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
                  ("numpy", "ndarray"), ("numpy", "dtype")}


def _load_text_array(path: Path, offset: int, what: str) -> np.ndarray:
    """An ``object`` .npy whose elements are all ``str`` or ``bytes`` (a string input's data).

    ``np.load(allow_pickle=True)`` would run whatever the file's pickle names; this unpickler
    resolves only the globals numpy's own array pickle uses, so a crafted file fails here.
    """
    import pickle

    import numpy as np

    class _ArrayOnly(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            if (module, name) not in _ARRAY_GLOBALS:
                raise pickle.UnpicklingError(f"{module}.{name} is not part of a numpy array")
            return super().find_class(module, name)

    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            array = _ArrayOnly(handle).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError, IndexError) as exc:
        raise UserError(f"The .npy file holds Python objects that are not a plain array of text ({exc})", path,
                        "Save the text as a numpy string array: np.save(FILE, np.asarray(values, dtype=str)).") from exc
    if not isinstance(array, np.ndarray) or array.dtype.kind != "O":
        raise UserError("The .npy file's objects are not an array", path,
                        "Save the text as a numpy string array: np.save(FILE, np.asarray(values, dtype=str)).")
    odd = next((v for v in array.flat if not isinstance(v, (str, bytes))), None)
    if odd is not None:
        raise UserError(f"The {what} file holds a {type(odd).__name__} among its objects; only text (str) can be "
                        "an object array's element", path,
                        "Save numbers with a numeric dtype, text as a numpy string array (dtype=str).")
    return array
