"""Ascend OM container: the 256-byte header and the partition tables (no protobuf here).

Facts: ../shared/reference/ascend_formats.md §1.1–1.2 (GE ``framework_types_internal.h``,
``om_file_helper.cc``; Netron ``om.js``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError

HEADER = struct.Struct("<4sII64sIBBBB32sI32sII20sB3sQBB62s")
HEADER_LEN = 256
VERSION_2 = 0x20000000

MODEL_TYPES = {0: "IR model", 1: "standard", 2: "OM Tiny", 3: "flow model", 4: "lite", 5: "bundle"}
PARTITION_TYPES = {
    0: "MODEL_DEF", 1: "WEIGHTS_DATA", 2: "TASK_INFO", 3: "TBE_KERNELS", 4: "CUST_AICPU_KERNELS",
    5: "SO_BINS", 6: "FLOW_MODEL", 7: "FLOW_SUBMODEL", 8: "MODEL_INOUT_INFO", 9: "STATIC_TASK_DESC",
    10: "DYNAMIC_TASK_DESC", 11: "TASK_PARAM", 12: "TILING_DATA", 20: "PRE_MODEL_DESC",
    21: "PRE_MODEL_SQE", 22: "PRE_KERNEL_ARGS", 23: "PRE_MODEL_DESC_EXTEND", 24: "BUNDLE_MODEL_INFO",
    25: "BUNDLE_MODEL_VAR_INFO", 26: "CUSTOM_OPS",
}


@dataclass
class Partition:
    """One partition: its type code, absolute file offset and size."""

    type: int
    offset: int
    size: int

    @property
    def type_name(self) -> str:
        return PARTITION_TYPES.get(self.type, f"unknown ({self.type})")


@dataclass
class OmHeader:
    """The header fields a user cares about."""

    version: int
    name: str
    model_type: int
    gen_mode: int
    encrypted: bool
    model_num: int
    platform_version: str
    platform_type: int
    body_length: int
    dynamic: bool
    ops: int
    om_ir_version: int
    table_64bit: bool

    def metadata(self) -> dict:
        """The header as the model's metadata shows it (names for codes, the version in hex)."""
        return {
            "om_version": hex(self.version), "om_name": self.name,
            "model_type": MODEL_TYPES.get(self.model_type, f"unknown ({self.model_type})"),
            "gen_mode": "online" if self.gen_mode == 1 else "offline", "encrypted": self.encrypted,
            "model_num": self.model_num, "platform_version": self.platform_version,
            "platform_type": self.platform_type, "dynamic": self.dynamic,
        }


@dataclass
class OmContainer:
    """Header plus one partition list per sub-model (``model_num`` > 1 gives several)."""

    header: OmHeader
    models: list[list[Partition]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def read_container(path: Path, buf: bytes) -> OmContainer:
    """Parse the header and the partition table(s); raise UserError on anything unreadable."""
    fix = "Convert the model again with atc, or check that the copy is complete."
    if len(buf) < 4 or buf[:4] != b"IMOD":
        if buf[:4] == b"PICO":
            raise UserError("This is an SVP (PICO) offline model; only DaVinci OM (IMOD) models are supported",
                            path, "Open the model converted for an Ascend NPU (atc --soc_version=Ascend...).")
        raise UserError(f"Not an Ascend OM model: the file does not start with 'IMOD' (it starts with {buf[:8]!r})",
                        path, fix)
    if len(buf) < HEADER_LEN:
        raise UserError(f"Truncated OM model: the file has {len(buf)} bytes, the header alone needs 256",
                        path, fix)
    (_, headsize, version, _checksum, length, is_encrypt, _is_checksum, model_type, gen_mode, name, ops,
     _user, om_ir_version, model_num, platform_version, platform_type, _pad, model_length, _os_check,
     is_unknown, _reserved) = HEADER.unpack_from(buf)
    body = model_length or length
    header = OmHeader(
        version=version, name=_cstr(name), model_type=model_type, gen_mode=gen_mode,
        encrypted=bool(is_encrypt), model_num=model_num if version >= VERSION_2 and model_num > 0 else 1,
        platform_version=_cstr(platform_version), platform_type=platform_type, body_length=body,
        dynamic=bool(is_unknown), ops=ops, om_ir_version=om_ir_version,
        table_64bit=bool(model_length) or model_type == 3)
    container = OmContainer(header)
    if header.encrypted:
        raise UserError("The OM model is encrypted; its graph cannot be read", path,
                        "Convert the model again without encryption to inspect its graph.")
    if headsize < HEADER_LEN or headsize > len(buf):
        raise UserError(f"Corrupt OM header: header size {headsize} (expected 256)", path, fix)
    if body and headsize + body != len(buf):
        container.problems.append(
            f"header says the body has {body} bytes, the file has {len(buf) - headsize} after the header")
        if headsize + body > len(buf):
            raise UserError(f"Truncated OM model: the header announces {headsize + body} bytes, "
                            f"the file has {len(buf)}", path, fix)
    offset = headsize
    for index in range(header.model_num):
        partitions, offset = _read_table(path, buf, offset, header.table_64bit, index)
        container.models.append(partitions)
    if offset != len(buf):
        container.problems.append(f"{len(buf) - offset} bytes after the last partition were not read")
    return container


def _read_table(path: Path, buf: bytes, offset: int, wide: bool, index: int) -> tuple[list[Partition], int]:
    where = f"{path} (partition table of model {index} at byte {offset})"
    fix = "The file is truncated or damaged; convert the model again with atc."
    # Try the encoding the header implies first, then the other (as Netron does).
    for use_wide in (wide, not wide):
        partitions = _try_table(buf, offset, use_wide)
        if partitions is not None:
            end = partitions[-1].offset + partitions[-1].size if partitions else offset
            return partitions, end
    raise UserError("Corrupt OM partition table: no valid partition list", where, fix)


def _try_table(buf: bytes, offset: int, wide: bool) -> list[Partition] | None:
    if offset + 4 > len(buf):
        return None
    count = struct.unpack_from("<I", buf, offset)[0]
    if not 0 < count <= 4096:
        return None
    entry, head = (24, 8) if wide else (12, 4)
    data = offset + head + entry * count
    if data > len(buf):
        return None
    partitions, cursor, seen = [], data, set()
    for k in range(count):
        if wide:
            ptype, _pad, _mem_offset, size = struct.unpack_from("<IIQQ", buf, offset + head + entry * k)
        else:
            ptype, _mem_offset, size = struct.unpack_from("<III", buf, offset + head + entry * k)
        # GE walks partitions sequentially and ignores mem_offset; flow models repeat type 7.
        if ptype > 64 or (ptype in seen and ptype != 7) or cursor + size > len(buf):
            return None
        seen.add(ptype)
        partitions.append(Partition(ptype, cursor, size))
        cursor += size
    return partitions
