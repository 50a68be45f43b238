"""Protobuf inside OM models and NPU dump files is decoded by the protobuf runtime, not by hand.

The message classes are built from descriptors (GE IR, DumpData); these tests check them against
the real OM fixtures (the GE-serialised ``root_model.om``: graph ``test_graph_cache`` with ops
``_arg_0`` Data, ``fused_op1`` FakeOpNpu and a NetOutput, ascend_formats.md §6) and against dump
headers written by the tests' own wire encoder, independent of the reader.
"""

from __future__ import annotations

import numpy as np
import pytest
from accuracy_helpers import encode_field, write_npu_dump

from studio.core.errors import UserError


def _model_def(path):
    from studio.tools.graph.om_format import read_container

    buf = path.read_bytes()
    container = read_container(path, buf)
    part = next(p for p in container.models[0] if p.type == 0)
    return buf[part.offset:part.offset + part.size]


def test_ge_ir_classes_read_the_real_model_def(ascend_fixtures):
    from studio.tools.graph import ge_proto
    from studio.tools.graph.reader import read_model

    path = ascend_fixtures / "om" / "root_model.om"
    model_def = ge_proto.ModelDef()
    model_def.ParseFromString(_model_def(path))
    graph = model_def.graph[0]
    assert graph.name == b"test_graph_cache"
    assert [(op.name, op.type) for op in graph.op] == [(b"Node_Output", b"NetOutput"), (b"_arg_0", b"Data"),
                                                         (b"fused_op1", b"FakeOpNpu")]
    keys = {entry.key for entry in model_def.attr}
    assert b"atc_cmdline" in keys
    read = read_model(path).main  # the reader is built on the same classes
    assert [(n.name, n.type) for n in read.nodes] == [(op.name.decode(), op.type.decode()) for op in graph.op]


def test_a_damaged_model_def_is_a_user_error_from_protobuf(ascend_fixtures, tmp_path):
    from studio.tools.graph.om_format import read_container
    from studio.tools.graph.reader import read_model

    path = ascend_fixtures / "om" / "root_model.om"
    buf = bytearray(path.read_bytes())
    part = next(p for p in read_container(path, bytes(buf)).models[0] if p.type == 0)
    buf[part.offset:part.offset + 2] = b"\x3a\xff"  # field 7 (graph) claims more bytes than there are
    broken = tmp_path / "broken.om"
    broken.write_bytes(bytes(buf))
    with pytest.raises(UserError, match="Corrupt OM graph definition") as info:
        read_model(broken)
    assert "DecodeError" in info.value.what


def test_dump_data_class_reads_a_header_written_by_an_independent_encoder(tmp_path):
    from studio.tools.accuracy.dump_proto import DumpData
    from studio.tools.accuracy.npu_dump import read_header

    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    path = write_npu_dump(tmp_path, "Conv2D", "conv1", [(x, 0)], [(x, 0)], original_op="conv1_orig")
    raw = path.read_bytes()
    header = DumpData()
    header.ParseFromString(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert header.version == b"2.0" and header.op_name == b"conv1" and header.dump_time == 1700000000000000
    assert list(header.input[0].shape.dim) == [1, 2, 3, 4] and header.input[0].size == x.nbytes
    assert header.output[0].original_op.name == b"conv1_orig"
    dump = read_header(path)
    assert (dump.inputs[0].shape, dump.outputs[0].original_op) == ([1, 2, 3, 4], "conv1_orig")


def test_a_dump_header_that_is_not_protobuf_is_a_user_error(tmp_path):
    from studio.tools.accuracy.npu_dump import read_header

    header = encode_field(4, b"\x0a\xff\xff")  # an input whose first field runs past its end
    path = tmp_path / "Relu.relu1.2.0.1700000000000000"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(UserError, match="NPU dump header is corrupt"):
        read_header(path)
