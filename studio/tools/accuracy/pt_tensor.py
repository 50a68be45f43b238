"""Read a tensor that ``torch.save`` wrote (a ``.pt`` file) without torch, and without running its pickle.

Since torch 1.6 ``torch.save`` writes a zip: ``<name>/data.pkl`` (a pickle of the object) and one
member ``<name>/data/<key>`` per storage (the raw elements, in the byte order that
``<name>/byteorder`` names). A tensor-only file's pickle holds exactly: the global
``torch._utils._rebuild_tensor_v2`` (``_rebuild_parameter`` for an ``nn.Parameter``), a persistent
id ``("storage", torch.<Type>Storage, key, location, numel)`` and ``collections.OrderedDict`` (the
empty backward hooks). This reader's unpickler resolves those names to its own functions (which
build a numpy array from the storage member) and refuses every other global before anything is
called, so a ``.pt`` holding arbitrary pickled objects is rejected without executing any of it.

BFloat16 becomes float32 (numpy has no bfloat16; msprobe's compare converts it the same way).
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np

from studio.core.errors import UserError

# torch.<Type>Storage -> numpy dtype of its elements ("bfloat16": read as uint16, widened below)
_STORAGES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "BFloat16Storage": "bfloat16", "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64, "ComplexDoubleStorage": np.complex128,
}
_FIX_REFUSED = ("Give a .pt that holds one tensor (what msprobe's tensor dump writes); a file holding other "
                "objects can run code when torch loads it, so Studio does not open it.")


class _Storage:
    """A persistent id seen in the pickle: which zip member holds the elements, and their dtype."""

    def __init__(self, dtype, key: str, numel: int):
        self.dtype, self.key, self.numel = dtype, key, numel


class _StorageType:
    """Stands for ``torch.<Type>Storage`` in the pickle (never torch's class)."""

    def __init__(self, name: str):
        self.name = name


class _Unpickler(pickle.Unpickler):
    """Knows only the names of a tensor-only file; storages are read from the zip on demand."""

    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str, path: Path, big_endian: bool):
        super().__init__(io.BytesIO(data))
        self.archive, self.prefix, self.path, self.big_endian = archive, prefix, path, big_endian

    def find_class(self, module: str, name: str):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return self._rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        if module == "torch" and name.endswith("Storage"):
            raise UserError(f"Tensor of an element type Studio does not read ({name})", self.path,
                            "Convert the tensor to float32 before dumping it.")
        raise UserError(f"Not a tensor-only .pt file: its pickle names {module}.{name}", self.path, _FIX_REFUSED)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[4], int)):
            raise UserError("Not a tensor-only .pt file: an unexpected persistent id in its pickle", self.path,
                            _FIX_REFUSED)
        return _Storage(_STORAGES[pid[1].name], str(pid[2]), pid[4])

    def _rebuild_tensor(self, storage, offset, size, stride, requires_grad=False, hooks=None, metadata=None):
        if not isinstance(storage, _Storage) or not all(isinstance(v, int) for v in (offset, *size, *stride)):
            raise UserError("Not a tensor-only .pt file: a malformed tensor record", self.path, _FIX_REFUSED)
        return _array(self._storage_elements(storage), storage, offset, tuple(size), tuple(stride), self.path)

    def _dtype(self, storage: _Storage) -> np.dtype:
        dtype = np.dtype(np.uint16 if isinstance(storage.dtype, str) else storage.dtype)
        return dtype.newbyteorder(">") if self.big_endian else dtype

    def _storage_elements(self, storage: _Storage) -> tuple[np.ndarray, bool]:
        """The storage's ``numel`` elements, and whether the array is this reader's own (writable,
        nothing else refers to it)."""
        member = f"{self.prefix}data/{storage.key}"
        dtype = self._dtype(storage)
        try:
            info = self.archive.getinfo(member)
        except KeyError as exc:
            raise UserError(f"The tensor's storage {member} is missing from the file", self.path,
                            "The dump is incomplete; dump again.") from exc
        need = storage.numel * dtype.itemsize
        if info.file_size < need:
            raise UserError(f"The tensor's storage holds {info.file_size} bytes, {need} expected", self.path,
                            "The file is truncated; dump again.")
        if info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1:
            return _read_stored(self.archive, info, dtype, storage.numel, self.path), True
        raw = self.archive.read(member)  # compressed (torch.save never does): zipfile inflates it
        if len(raw) < need:
            raise UserError(f"The tensor's storage holds {len(raw)} bytes, {need} expected", self.path,
                            "The file is truncated; dump again.")
        return np.frombuffer(raw, dtype=dtype, count=storage.numel), False


def _read_stored(archive: zipfile.ZipFile, info: zipfile.ZipInfo, dtype: np.dtype, count: int,
                 path: Path) -> np.ndarray:
    """An uncompressed member's first ``count`` elements read from the file straight into a new
    array: no bytes object to copy out of, and no CRC pass (zipfile's read does both, which cost
    as much as the six metrics of the pair); a file cut short still fails the length check."""
    fp = archive.fp
    fp.seek(info.header_offset)
    header = fp.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise UserError("The .pt file is damaged (a storage's zip header is missing)", path,
                        "The dump was cut short (disk full, job killed); dump again.")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    out = np.empty(count, dtype=dtype)
    fp.seek(info.header_offset + 30 + name_length + extra_length)
    got = fp.readinto(memoryview(out.view(np.uint8)))
    if got != out.nbytes:
        raise UserError(f"The tensor's storage holds {got} bytes, {out.nbytes} expected", path,
                        "The file is truncated; dump again.")
    return out


def _rebuild_parameter(data, requires_grad, hooks, *rest):
    return data


def _array(elements: tuple[np.ndarray, bool], storage: _Storage, offset: int, size: tuple, stride: tuple,
           path: Path) -> np.ndarray:
    flat, own = elements
    bf16 = isinstance(storage.dtype, str)
    if size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else offset - 1
        if offset < 0 or last >= storage.numel or any(s < 0 for s in stride):
            raise UserError("The tensor reaches past its storage", path, "The file is damaged; dump again.")
        view = np.lib.stride_tricks.as_strided(flat[offset:], shape=size,
                                               strides=tuple(s * flat.itemsize for s in stride))
    else:
        if offset >= storage.numel:
            raise UserError("The tensor reaches past its storage", path, "The file is damaged; dump again.")
        view = flat[offset:offset + 1].reshape(())
    # At most one copy, in native byte order (for bfloat16 straight to the uint32 whose top half it
    # is); none where the tensor is its whole storage, in order, read into an array of our own.
    if bf16:
        array = view.astype(np.uint32)
        np.left_shift(array, np.uint32(16), out=array)
        return array.view(np.float32)
    if not view.dtype.isnative:
        return view.astype(view.dtype.newbyteorder("="))
    if own and offset == 0 and view.size == flat.size and view.flags.c_contiguous:
        return flat.reshape(size)
    return view.copy()  # astype to a native twin of the dtype is no plain copy: 3x slower on float32


def read_pt_tensor(path: Path | str) -> np.ndarray:
    """The tensor saved in ``path`` as a numpy array; UserError for anything else, a truncated or damaged file."""
    path = Path(path)
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError as exc:
        raise UserError("Tensor file not found", path, "Give the dump folder msprobe wrote, with its "
                        "dump_tensor_data/ beside dump.json.") from exc
    except zipfile.BadZipFile as exc:
        with open(path, "rb") as handle:
            head = handle.read(2)
        if head[:1] == b"\x80":
            raise UserError("A .pt in torch's legacy (pre-1.6, non-zip) format: Studio reads only the zip format",
                            path, "Save the tensor again with a current torch (torch.save writes the zip "
                                  "format by default).") from exc
        raise UserError("Not a readable .pt file (the zip is truncated or damaged)", path,
                        "The dump was cut short (disk full, job killed); dump again.") from exc
    except OSError as exc:
        raise UserError(f"Cannot read the tensor file ({exc.strerror})", path, "Check the file's permissions.") \
            from exc
    with archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pickles) != 1:
            raise UserError("Not a torch.save file: no data.pkl in the zip", path, _FIX_REFUSED)
        prefix = pickles[0][:-len("data.pkl")]
        try:
            order = archive.read(prefix + "byteorder").decode().strip() if prefix + "byteorder" in names \
                else "little"
            data = archive.read(pickles[0])
            result = _Unpickler(data, archive, prefix, path, order == "big").load()
        except UserError:
            raise
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise UserError(f"The .pt file is truncated or damaged ({exc})", path,
                            "The dump was cut short (disk full, job killed); dump again.") from exc
        except (pickle.UnpicklingError, TypeError, AttributeError, IndexError, KeyError, RecursionError) as exc:
            raise UserError(f"Not a tensor-only .pt file ({exc})", path, _FIX_REFUSED) from exc
    if not isinstance(result, np.ndarray):
        raise UserError(f"The .pt file holds a {type(result).__name__}, not one tensor", path, _FIX_REFUSED)
    return result
