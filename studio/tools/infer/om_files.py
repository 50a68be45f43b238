"""The files an .om run exchanges with msame or ais_bench: input tensors out, output tensors back.

Both tools take a folder of ``.bin`` files (one picture's input tensor each, raw bytes in the
model's input type), run the model once per file in name order, and write each file's outputs
into a new sub-folder of ``--output``: msame as ``<stem>_output_<k>.bin``, ais_bench as
``<stem>_<k>.bin`` (raw bytes; the shapes and types are the OM's output descriptions). The
pictures are named by their index (``000000.bin``, ...), so the tools' name order is the
pictures' order whatever their own names are.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress

#: The folder the archive unpacks into on the target (the tools' ``--input``).
INPUT_FOLDER = "in"
_MSAME_TIME = re.compile(r"^Inference time: ([0-9.eE+-]+)\s*ms")


@dataclass(frozen=True)
class TensorSpec:
    """One OM input or output: name, shape (static dims) and numpy type."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def input_name(index: int) -> str:
    """The file name of picture ``index``'s input tensor (name order = picture order)."""
    return f"{index:06d}.bin"


def write_inputs(archive: Path, tensors: Iterator[tuple[int, np.ndarray | None]], spec: TensorSpec, count: int,
                 cancel: CancelToken | None = None) -> Generator[Progress, None, set[int]]:
    """Write each ``(index, tensor)`` (cast to the input's type) into the tar ``archive`` under
    ``in/``; a None tensor (an unreadable picture) is left out. Returns the indices written."""
    written: set[int] = set()
    with tarfile.open(archive, "w") as tar:
        folder = tarfile.TarInfo(INPUT_FOLDER)
        folder.type, folder.mode = tarfile.DIRTYPE, 0o700
        tar.addfile(folder)
        for done, (index, tensor) in enumerate(tensors, 1):
            if cancel is not None:
                cancel.raise_if_cancelled()
            if tensor is not None:
                data = np.ascontiguousarray(tensor, dtype=spec.dtype).tobytes()
                if len(data) != spec.nbytes:
                    raise UserError(f"The input tensor has {len(data)} bytes; the model's input {spec.name!r} "
                                    f"{list(spec.shape)} {spec.dtype} takes {spec.nbytes}", None,
                                    "Give --size HxW equal to the model's input size (or convert the model for it).")
                info = tarfile.TarInfo(f"{INPUT_FOLDER}/{input_name(index)}")
                info.size, info.mode = len(data), 0o600
                tar.addfile(info, io.BytesIO(data))
                written.add(index)
            if done % 16 == 0 or done == count:
                yield Progress(done / count, f"preprocessed {done:,} of {count:,} pictures")
    return written


EXTRA_BYTES = 16 * 2**20  # what a tool may write beside the outputs (summaries, logs)


def output_folder(out: Path) -> Path:
    """The sub-folder the tool wrote its outputs into (msame: a time stamp; ais_bench: a date and time)."""
    folders = [p for p in Path(out).iterdir() if p.is_dir()] if Path(out).is_dir() else []
    if len(folders) != 1:
        raise UserError(f"Expected one folder of outputs in {out}, found {len(folders)}", out,
                        "Run again; the tool's output above says what it wrote.")
    return folders[0]


def read_outputs(folder: Path, index: int, specs: list[TensorSpec], tool: str) -> list[np.ndarray]:
    """Picture ``index``'s outputs, shaped and typed as the OM describes them."""
    stem = input_name(index)[:-4]
    outputs = []
    for k, spec in enumerate(specs):
        path = folder / (f"{stem}_output_{k}.bin" if tool == "msame" else f"{stem}_{k}.bin")
        try:
            raw = path.read_bytes()
        except OSError:
            raise UserError(f"{tool} wrote no output {k} for picture {index + 1}", path,
                            f"Check {tool}'s output above; the model may have failed on that input.") from None
        if len(raw) != spec.nbytes:
            raise UserError(f"Output {k} ({spec.name}) has {len(raw)} bytes; the OM describes {list(spec.shape)} "
                            f"{spec.dtype} ({spec.nbytes} bytes)", path,
                            "The model's outputs have dynamic sizes; run it with an ONNX model here instead.")
        outputs.append(np.frombuffer(raw, dtype=spec.dtype).reshape(spec.shape))
    return outputs


def msame_time(line: str) -> float | None:
    """The milliseconds of a msame ``Inference time: 7.2ms`` line (one per input file), or None."""
    found = _MSAME_TIME.match(line.strip())
    return float(found.group(1)) if found else None


def output_index(name: str, tool: str) -> int | None:
    """Which output ``k`` a tool's file is (msame ``<stem>_output_<k>.bin``, ais_bench ``<stem>_<k>.bin``)."""
    found = re.search(r"_output_(\d{1,4})\.bin$" if tool == "msame" else r"_(\d{1,4})\.bin$", name)
    return int(found.group(1)) if found else None


def check_output_sizes(listing: list[tuple[int, str]], specs: list[TensorSpec], tool: str, pictures: int,
                       where: str) -> None:
    """UserError, before anything is downloaded, when a tool's output file on the target is not the
    size the OM describes, or the folder holds far more than the outputs of ``pictures`` pictures.
    ``listing`` is (size in bytes, path relative to the output folder) per file."""
    expected = sum(spec.nbytes for spec in specs) * pictures
    total = 0
    for size, path in listing:
        total += size
        k = output_index(path, tool)
        if k is None or k >= len(specs):
            continue  # a summary the tool writes beside the outputs (counted in the total)
        spec = specs[k]
        if size != spec.nbytes:
            raise UserError(f"Output {k} ({spec.name}) has {size:,} bytes; the OM describes {list(spec.shape)} "
                            f"{spec.dtype} ({spec.nbytes:,} bytes); nothing was downloaded", f"{where}/{path}",
                            "The model's outputs have dynamic sizes; run it with an ONNX model here instead.")
    if total > expected + EXTRA_BYTES:
        raise UserError(f"The tool's output folder holds {total:,} bytes where {pictures:,} pictures' outputs take "
                        f"{expected:,}; nothing was downloaded", where,
                        "Check what else the tool wrote there (its output above).")
