"""Message classes for the NPU dump file header (``toolkit.dumpdata.DumpData``).

Schema: Ascend runtime ``dump_data.proto`` (field numbers in ascend_formats.md §2.4), described
in Python and built by the ``protobuf`` runtime at import time (no protoc step). Text fields are
``bytes`` (decoded with replacement by the reader) and enums plain integers, so a value newer than
this schema stays a number; proto2 syntax, so a singular field says whether it was present.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from studio.core.protodesc import build, message


def _dump_data() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name="studio_dump_data.proto", package="toolkit.dumpdata",
                                              syntax="proto2")
    p = ".toolkit.dumpdata."
    message(file, "Shape", [("dim", 1, "uint64", True)])
    message(file, "OriginalOp", [("name", 1, "bytes", False), ("output_index", 2, "uint64", False),
                                 ("data_type", 3, "uint64", False), ("format", 4, "uint64", False)])
    message(file, "OpOutput", [
        ("data_type", 1, "uint64", False), ("format", 2, "uint64", False), ("shape", 3, p + "Shape", False),
        ("original_op", 4, p + "OriginalOp", False), ("data", 5, "bytes", False), ("size", 6, "uint64", False),
        ("original_shape", 7, p + "Shape", False), ("sub_format", 8, "uint64", False),
        ("address", 9, "uint64", False), ("offset", 11, "uint64", False)])
    message(file, "OpInput", [
        ("data_type", 1, "uint64", False), ("format", 2, "uint64", False), ("shape", 3, p + "Shape", False),
        ("data", 4, "bytes", False), ("size", 5, "uint64", False), ("original_shape", 6, p + "Shape", False),
        ("sub_format", 7, "uint64", False), ("address", 8, "uint64", False), ("offset", 9, "uint64", False)])
    message(file, "OpBuffer", [("buffer_type", 1, "uint64", False), ("data", 2, "bytes", False),
                               ("size", 3, "uint64", False)])
    message(file, "DumpData", [
        ("version", 1, "bytes", False), ("dump_time", 2, "uint64", False), ("output", 3, p + "OpOutput", True),
        ("input", 4, p + "OpInput", True), ("buffer", 5, p + "OpBuffer", True), ("op_name", 6, "bytes", False)])
    return file


DumpData = build(_dump_data(), ["DumpData"])["DumpData"]
