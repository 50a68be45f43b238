"""Message classes for GE's IR (``ge.proto.ModelDef``, the MODEL_DEF partition of an OM file).

No Ascend package exists here and protoc is no build step of ours, so the schema (GE
``ge_ir.proto``, field numbers in ascend_formats.md §1.3) is written as a descriptor and the
classes are made from it by the ``protobuf`` runtime at import time. Deliberate deviations from
the ``.proto``, which keep the reader's output identical to the file's bytes:

* text fields are ``bytes`` (GE writes names that are not always UTF-8; the reader decodes with
  replacement), and compressed attribute keys start with ``\\0``;
* ``map<string, AttrDef>`` is its wire form, a repeated ``{key = 1; value = 2}`` entry, so keys
  keep their order and duplicates as written;
* enums (``DataType``) are plain integers: values newer than this schema stay numbers;
* proto2 syntax, so every singular field says whether it was present (the attribute's kind is
  the field that is set).
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from studio.core.protodesc import build
from studio.core.protodesc import message as _message


def _ge_ir() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name="studio_ge_ir.proto", package="ge.proto", syntax="proto2")
    p = ".ge.proto."
    _message(file, "AttrEntry", [("key", 1, "bytes", False), ("value", 2, p + "AttrDef", False)])
    _message(file, "ShapeDef", [("dim", 1, "int64", True)])
    _message(file, "TensorDescriptor", [
        ("name", 1, "bytes", False), ("dtype", 2, "int64", False), ("shape", 3, p + "ShapeDef", False),
        ("layout", 4, "bytes", False), ("attr", 5, p + "AttrEntry", True), ("size", 10, "int64", False),
        ("weight_size", 11, "int64", False), ("data_offset", 18, "int64", False)])
    _message(file, "TensorDef", [("desc", 1, p + "TensorDescriptor", False), ("data", 2, "bytes", False)])
    _message(file, "NamedAttrs", [("name", 1, "bytes", False), ("attr", 2, p + "AttrEntry", True)])
    _message(file, "ListValue", [
        ("s", 2, "bytes", True), ("i", 3, "int64", True), ("f", 4, "float", True), ("b", 5, "bool", True),
        ("bt", 7, "bytes", True), ("td", 8, p + "TensorDescriptor", True), ("t", 9, p + "TensorDef", True),
        ("g", 10, p + "GraphDef", True), ("na", 11, p + "NamedAttrs", True), ("dt", 12, "int64", True)])
    _message(file, "ListInt", [("list_i", 1, "int64", True)])
    _message(file, "ListListInt", [("list_list_i", 1, p + "ListInt", True)])
    _message(file, "ListFloat", [("list_f", 1, "float", True)])
    _message(file, "ListListFloat", [("list_list_f", 1, p + "ListFloat", True)])
    _message(file, "AttrDef", [
        ("list", 1, p + "ListValue", False), ("s", 2, "bytes", False), ("i", 3, "int64", False),
        ("f", 4, "float", False), ("b", 5, "bool", False), ("bt", 7, "bytes", False),
        ("func", 10, p + "NamedAttrs", False), ("td", 11, p + "TensorDescriptor", False),
        ("t", 12, p + "TensorDef", False), ("g", 13, p + "GraphDef", False),
        ("list_list_int", 14, p + "ListListInt", False), ("dt", 15, "int64", False),
        ("list_list_float", 16, p + "ListListFloat", False)])
    _message(file, "OpDef", [
        ("name", 1, "bytes", False), ("type", 2, "bytes", False), ("input", 5, "bytes", True),
        ("attr", 10, p + "AttrEntry", True), ("stream_id", 22, "int64", False),
        ("input_desc", 33, p + "TensorDescriptor", True), ("output_desc", 34, p + "TensorDescriptor", True),
        ("subgraph_name", 35, "bytes", True)])
    _message(file, "GraphDef", [
        ("name", 1, "bytes", False), ("input", 4, "bytes", True), ("output", 5, "bytes", True),
        ("op", 6, p + "OpDef", True), ("attr", 11, p + "AttrEntry", True)])
    _message(file, "ModelDef", [
        ("name", 1, "bytes", False), ("graph", 7, p + "GraphDef", True), ("attr", 11, p + "AttrEntry", True)])
    # A FLOW_SUBMODEL partition: a whole OM file with its name and device type.
    _message(file, "FlowSubmodel", [("name", 1, "bytes", False), ("type", 2, "bytes", False),
                                    ("om_data", 3, "bytes", False)])
    return file


_CLASSES = build(_ge_ir(), ["ModelDef", "FlowSubmodel", "TensorDescriptor"])
ModelDef = _CLASSES["ModelDef"]
FlowSubmodel = _CLASSES["FlowSubmodel"]
TensorDescriptor = _CLASSES["TensorDescriptor"]
