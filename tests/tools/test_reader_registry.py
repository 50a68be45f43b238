"""One reader registry: what detection picks, the same module reads, on every real file we have.

Each format module owns its ``match`` and its ``open``; these tests walk the real Ascend files
(and the folders that hold them) and the demo workspace, and check that whatever the registry
recognises is then read by that format's reader without an error.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from studio.core import formats
from studio.core.errors import UserError
from studio.core.jobs import run_job

# Real files the registry does not claim: files that only make sense inside their folder (rank
# metadata, communication JSONs, stacks) or that are refused on purpose (a fake .om).
NOT_FORMATS = {".json", ".md", ".csv", ".db", ".om", ".done", ".0", ".1", ""}  # .0: msprof info.json.0


# A PyTorch-NPU output with static_op_mem.csv alone: structurally a profiler folder, but the
# timeline reader finds nothing in it (the memory engine reads it).
MEMORY_ONLY = ("real", "memory", "msinsight_static_op_mem")


def _read(detected: formats.Detected):
    return run_job(formats.open_job(detected))


def test_every_catalogue_entry_is_owned_by_the_module_that_reads_it():
    # Netron's rule: the match and the reader live in one module, so they cannot disagree.
    for name in formats.FILE_FORMATS + formats.FOLDER_FORMATS:
        module_name, _, attribute = name.partition(":")
        module = importlib.import_module(module_name)
        fmt = getattr(module, attribute)
        assert fmt.match.__module__ == module_name, name
        if fmt.open is not None:
            assert fmt.open.__module__ in (module_name, "studio.core.formats"), name
    ids = [f.id for f in formats.known_formats()]
    assert len(ids) == len(set(ids)), "a format id is registered twice"


def test_real_files_are_read_by_the_format_that_matched_them(ascend_fixtures):
    read, refused = {}, []
    # ``real/`` and ``real/<category>/`` are our own grouping folders (SOURCES.md): they hold
    # several unrelated runs side by side, which no reader should take as one.
    ours = {ascend_fixtures / "real", *(p for p in (ascend_fixtures / "real").iterdir() if p.is_dir())}
    for path in sorted(p for p in ascend_fixtures.rglob("*") if not p.name.startswith(".") and p not in ours):
        try:
            detected = formats.detect(path)
        except UserError:
            refused.append(path)
            continue
        if path.relative_to(ascend_fixtures).parts[:3] == MEMORY_ONLY:
            continue  # a profiler output holding memory files only: read by the memory engine
        result = _read(detected)  # must not raise: the reader agrees with the match
        assert result is not None, path
        read.setdefault(detected.format.id, []).append(path.relative_to(ascend_fixtures))
    # Every kind of real file we hold is recognised and read (numbers: the fixtures as shipped).
    for fmt in ("om", "chrome_trace", "profiling_csv", "profiling_db", "aipp_cfg", "acl_json", "msprobe_dump",
                "msprobe_dir", "mindx_pipeline", "msprof_dir", "pytorch_npu_dir", "cluster_dir"):
        assert read.get(fmt), f"no real {fmt} file was read"
    assert sum(len(v) for v in read.values()) >= 80
    # What is refused is a fake model, a file that is only a part of its folder, or a folder
    # that only groups others.
    assert {p.suffix for p in refused if p.is_file()} <= NOT_FORMATS


def test_demo_workspace_files_are_read_by_the_format_that_matched_them(tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("cv2")
    from studio.tools.demo.workspace import ensure_demo_workspace

    demo = run_job(ensure_demo_workspace(tmp_path / "demo"))  # with every tool's demo results
    seen = {}
    for path in [demo.folder, *sorted(demo.folder.rglob("*"))]:
        try:
            detected = formats.detect(path)
        except UserError:
            # pictures, README and HTML reports, and the JSON side files of a dump or profile
            assert path.is_dir() or path.suffix in (".png", ".md", ".html", ".json", "") or path.name == ".studio-demo", path
            continue
        assert _read(detected) is not None, path
        seen[detected.format.id] = seen.get(detected.format.id, 0) + 1
    assert {"workspace", "onnx", "npy", "dump_dir", "ort_profile", "profiling_csv", "studio_profile",
            "advisor_report", "mindx_pipeline", "aipp_cfg", "fusion_switch", "compare_csv", "node_data"} <= set(seen)


def _write_dump(folder: Path, name: str) -> Path:
    from accuracy_helpers import write_npu_dump

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    written = write_npu_dump(folder, "Conv2D", "conv1", [(x, 2)], [(x * 2, 2)])
    return written.rename(folder / name)


@pytest.mark.parametrize("name", ["Conv2D.conv1.3.1700000000000",  # 4 tokens: no stream id
                                  "Conv2D.conv1.3.0.1700000000000",  # 5 tokens
                                  "Conv2D.conv1.3.0.1700000000"])  # a 10-digit (seconds) timestamp
def test_dump_names_the_reader_accepts_are_detected_as_dumps(tmp_path, name):
    path = _write_dump(tmp_path, name)
    from studio.tools.accuracy.npu_dump import parse_name

    parse_name(path)  # the reader takes the name...
    detected = formats.detect(path)  # ...so detection must too
    assert detected.format.id == "npu_dump"
    dump = _read(detected)
    assert [e.kind for e in dump.entries] == ["input", "output"]
    assert formats.detect(tmp_path).format.id == "dump_dir"


def test_a_folder_detected_as_a_dump_is_one_the_dump_reader_reads(tmp_path):
    # .npy files only in a sub-folder: the dump reader reads the .npy files of the folder itself,
    # so the folder is not a dump (the sub-folder is).
    inner = tmp_path / "outer" / "run1"
    inner.mkdir(parents=True)
    np.save(inner / "conv1.0.1700000000000.npy", np.ones((2, 2), np.float32))
    with pytest.raises(UserError, match="not one Studio can open"):
        formats.detect(tmp_path / "outer")
    detected = formats.detect(inner)
    assert detected.format.id == "dump_dir"
    assert len(_read(detected).entries) == 1


def test_a_csv_the_profiler_cannot_read_is_not_detected_as_a_profiling_csv(tmp_path):
    # Op Name and OP Type without the task times: the table reader refuses it, so must detection.
    csv = tmp_path / "ops.csv"
    csv.write_text("Op Name,OP Type,Count\nconv,Conv2D,3\n")
    with pytest.raises(UserError, match="Not a valid profiling or comparison CSV"):
        formats.detect(csv)


def test_profiler_graph_and_accuracy_readers_refuse_other_formats_by_the_registry(tmp_path):
    from studio.tools.accuracy.dumpset import load_dump
    from studio.tools.graph.reader import read_model
    from studio.tools.profiler.loader import open_profile

    csv = tmp_path / "op_summary.csv"
    csv.write_text("Op Name,OP Type,Task Start Time(us),Task Duration(us)\nconv,Conv2D,10.0,1.5\n")
    with pytest.raises(UserError, match="Not a model the graph viewer can open"):
        read_model(csv)
    trace = run_job(open_profile(csv, use_cache=False))
    assert trace.tables
    with pytest.raises(UserError, match="does not read ONNX model"):
        pytest.importorskip("onnx")
        from studio.tools.demo.models import build_classifier

        model = tmp_path / "m.onnx"
        model.write_bytes(build_classifier().SerializeToString())
        run_job(open_profile(model, use_cache=False))
    with pytest.raises(UserError, match="Folder holds no tensor dump"):
        load_dump(tmp_path)
