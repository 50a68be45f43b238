"""Protobuf message classes from a schema written in Python: no protoc step, no generated files.

Readers of formats whose ``.proto`` is not shipped by any installed package (GE's IR inside OM
models, the NPU dump header) describe the messages they read with :func:`message` and get classes
from the ``protobuf`` runtime with :func:`build`, once, at import time.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_TYPES = {"bytes": _F.TYPE_BYTES, "int64": _F.TYPE_INT64, "float": _F.TYPE_FLOAT, "bool": _F.TYPE_BOOL,
          "uint64": _F.TYPE_UINT64, "uint32": _F.TYPE_UINT32, "int32": _F.TYPE_INT32}


def message(file: descriptor_pb2.FileDescriptorProto, name: str, fields: list[tuple]):
    """Add message ``name`` to ``file``; ``fields`` = [(name, number, scalar type or ".pkg.Message", repeated)]."""
    described = file.message_type.add()
    described.name = name
    for field_name, number, kind, repeated in fields:
        field = described.field.add()
        field.name, field.number = field_name, number
        field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
        if kind in _TYPES:
            field.type = _TYPES[kind]
        else:
            field.type, field.type_name = _F.TYPE_MESSAGE, kind
    return described


def build(file: descriptor_pb2.FileDescriptorProto, names: list[str]) -> dict:
    """Register ``file`` in a private pool (no clash with any other schema) and return its classes."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.{name}"))
            for name in names}
