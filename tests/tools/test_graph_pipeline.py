"""MindX SDK pipelines: the 7 real reference-app pipelines open, draw, check and edit as expected.

Counts are checked against a plain ``json.load`` walk of each file; findings are written down per
file (the fixtures hold the pipelines only, so every model and config they name is absent).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from studio.core import formats
from studio.core.errors import UserError
from studio.tools.graph.pipeline.check import check_pipeline
from studio.tools.graph.pipeline.document import read_pipeline
from studio.tools.graph.pipeline.edit import set_prop_in_file
from studio.tools.graph.reader import read_model

APPS = "real/mindx_pipeline/mindxsdk-referenceapps"
PIPELINES = {
    "regular": "mxVision/InferOfflineVideo/regular/pipeline/regular.pipeline",
    "ocr": "mxVision/GeneralTextRecognition/data/OCR.pipeline",
    "yolov7": "mxVision/YOLOv7Detection/pipeline/Sample.pipeline",
    "quality": "mxVision/VideoQualityDetection/pipeline/VideoQualityDetection.pipeline",
    "easystream": "mxVision/MultiThread/python/EasyStream.pipeline",
    "fairmot": "contrib/FairMOT/pipeline/fairmot.pipeline",
    "osd": "tutorials/OsdSample/pipeline/SampleOsd.pipeline",
}
# (errors, warnings, infos) and what the errors are about, per pipeline.
EXPECTED = {
    "regular": ((3, 0, 0), {"modelPath", "postProcessConfigPath", "labelPath"}),
    "ocr": ((9, 0, 2), {"modelPath", "postProcessConfigPath", "postProcessLibPath", "labelPath"}),
    "yolov7": ((3, 0, 0), {"modelPath", "postProcessConfigPath", "labelPath"}),
    "quality": ((0, 0, 0), set()),
    "easystream": ((12, 0, 0), {"modelPath", "postProcessConfigPath", "labelPath"}),
    # two plugins of the app's own, and three references to the metadata keys they write
    "fairmot": ((1, 5, 0), {"modelPath"}),
    "osd": ((0, 0, 0), set()),
}


def _path(ascend_fixtures: Path, key: str) -> Path:
    return ascend_fixtures / APPS / PIPELINES[key]


def _plain_walk(path: Path) -> tuple[int, int]:
    """(elements, links) counted from the JSON alone: next entries plus former entries not also
    written as next."""
    data = json.loads(path.read_text(encoding="utf-8"))
    elements = links = 0
    for stream in data.values():
        pairs = set()
        for name, element in stream.items():
            if name == "stream_config":
                continue
            elements += 1
            nexts = element.get("next", [])
            for target in [nexts] if isinstance(nexts, str) else nexts:
                other, _, port = target.partition(":")
                pairs.add((name, other, port or None))
            if "former" in element:
                pairs.add((element["former"], name, None))
        links += len(pairs)
    return elements, links


@pytest.mark.parametrize("key", sorted(PIPELINES))
def test_real_pipelines_draw_every_element_and_link(ascend_fixtures, key):
    path = _path(ascend_fixtures, key)
    assert formats.detect(path).format.id == "mindx_pipeline"
    model = read_model(path)
    src, dst, names = model.main.edges()
    data_edges = sum(1 for n in names if n)
    assert (len(model.main.nodes), data_edges) == _plain_walk(path)
    streams = json.loads(path.read_text(encoding="utf-8"))
    assert {n.name.split("/")[0] for n in model.main.nodes} == set(streams)


@pytest.mark.parametrize("key", sorted(PIPELINES))
def test_real_pipelines_give_the_findings_written_down(ascend_fixtures, key):
    result = check_pipeline(read_pipeline(_path(ascend_fixtures, key)))
    counts = tuple(sum(1 for f in result.findings if f.severity == s) for s in ("error", "warning", "info"))
    (expected_counts, error_props) = EXPECTED[key]
    assert counts == expected_counts, [str(f) for f in result.findings]
    assert {f.prop for f in result.errors} == error_props
    assert all(f.line > 0 and f.element for f in result.findings)


def test_ocr_resolves_paths_from_the_folder_above_data(ascend_fixtures):
    path = _path(ascend_fixtures, "ocr")
    result = check_pipeline(read_pipeline(path))
    assert result.project == path.parent.parent.resolve() and result.project_reason.startswith("guessed")


def test_easystream_keeps_its_four_streams_and_devices(ascend_fixtures):
    model = read_model(_path(ascend_fixtures, "easystream"))
    devices = {k: v for k, v in model.metadata.items() if k.endswith("deviceId")}
    assert devices == {"detection0 deviceId": "0", "detection1 deviceId": "5", "detection2 deviceId": "2",
                       "detection3 deviceId": "3"}


def _copy(ascend_fixtures: Path, key: str, tmp_path: Path) -> Path:
    source = _path(ascend_fixtures, key)
    target = tmp_path / source.name
    target.write_bytes(source.read_bytes())
    return target


@pytest.mark.parametrize("key", ["osd", "ocr", "fairmot"])
def test_set_changes_one_value_and_keeps_every_other_byte(ascend_fixtures, tmp_path, key):
    path = _copy(ascend_fixtures, key, tmp_path)
    before = path.read_bytes()
    pipeline = read_pipeline(path)
    stream = pipeline.streams[0]
    element, prop, old = next((e.name, p, v) for e in stream.elements.values() for p, v in e.props.items()
                              if isinstance(v, str))
    set_prop_in_file(path, f"{element}.{prop}=new/value.om")
    after = path.read_bytes()
    old_literal = json.dumps(old, ensure_ascii=False).encode()
    assert after == before.replace(old_literal, b'"new/value.om"', 1) or after.count(b'"new/value.om"') == 1
    assert len(after) - len(before) == len(b'"new/value.om"') - len(old_literal)
    assert (b"\r\n" in before) == (b"\r\n" in after) and after.count(b"\r\n") == before.count(b"\r\n")
    assert json.loads(after)[stream.name][element]["props"][prop] == "new/value.om"


def test_set_adds_a_missing_prop_with_the_siblings_indentation(ascend_fixtures, tmp_path):
    path = _copy(ascend_fixtures, "osd", tmp_path)  # CR LF line endings
    set_prop_in_file(path, "mxpi_imagedecoder0.deviceId=0")
    text = path.read_bytes().decode()
    assert "\n" not in text.replace("\r\n", "")
    data = json.loads(text)
    assert data["encoder"]["mxpi_imagedecoder0"]["props"]["deviceId"] == "0"
    set_prop_in_file(path, "encoder/appsrc0.blocksize=1024")
    assert json.loads(path.read_text())["encoder"]["appsrc0"]["props"]["blocksize"] == "1024"


def test_set_refuses_what_it_cannot_do_cleanly(ascend_fixtures, tmp_path):
    path = _copy(ascend_fixtures, "easystream", tmp_path)
    before = path.read_bytes()
    with pytest.raises(UserError, match="several streams"):
        set_prop_in_file(path, "mxpi_modelinfer0.modelPath=x.om")
    with pytest.raises(UserError, match="No element"):
        set_prop_in_file(path, "nothere.modelPath=x.om")
    with pytest.raises(UserError, match="ELEMENT.PROP=VALUE"):
        set_prop_in_file(path, "modelPath")
    assert path.read_bytes() == before
    set_prop_in_file(path, "detection1/mxpi_modelinfer0.modelPath=x.om")
    data = json.loads(path.read_text())
    assert data["detection1"]["mxpi_modelinfer0"]["props"]["modelPath"] == "x.om"
    assert data["detection0"]["mxpi_modelinfer0"]["props"]["modelPath"] != "x.om"
    quality = _copy(ascend_fixtures, "quality", tmp_path)
    with pytest.raises(UserError, match="holds an object"):
        set_prop_in_file(quality, "mxpi_qualitydetection0.qualityDetectionConfigContent=x")


def _pipeline(tmp_path: Path, stream: dict, name: str = "app.pipeline") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"s": {"stream_config": {"deviceId": "0"}, **stream}}, indent=4))
    return path


def test_structural_findings_name_element_and_prop(tmp_path):
    path = _pipeline(tmp_path, {
        "appsrc0": {"factory": "appsrc", "next": "queue0"},
        "queue0": {"factory": "queue", "next": ["mxpi_tensorinfer0", "ghost:1"]},
        "mxpi_tensorinfer0": {"factory": "mxpi_tensorinfer", "props": {"dataSource": "nobody", "deviceId": "1",
                                                                       "modelPaht": "m.om"},
                              "next": "queue0"},
    })
    found = {(f.severity, f.element, f.prop) for f in check_pipeline(read_pipeline(path), tmp_path).findings}
    assert ("error", "queue0", "next") in found                  # ghost:1
    assert ("error", "mxpi_tensorinfer0", "dataSource") in found  # nobody
    assert ("error", "queue0", "next") in found or ("error", "mxpi_tensorinfer0", "next") in found  # the cycle
    assert ("warning", "mxpi_tensorinfer0", "deviceId") in found
    assert ("warning", "mxpi_tensorinfer0", "modelPaht") in found
    cycle = [f for f in check_pipeline(read_pipeline(path), tmp_path).findings if "cycle" in f.message]
    assert cycle and "queue0 -> mxpi_tensorinfer0 -> queue0" in cycle[0].message
    # With an app's own plugin in the stream, an unknown reference may be a key it writes: a warning.
    data = json.loads(path.read_text())
    data["s"]["weird0"] = {"factory": "not_a_plugin"}
    path.write_text(json.dumps(data))
    found = {(f.severity, f.element, f.prop) for f in check_pipeline(read_pipeline(path), tmp_path).findings}
    assert ("warning", "weird0", "factory") in found and ("warning", "mxpi_tensorinfer0", "dataSource") in found


def test_a_model_whose_size_disagrees_with_the_resize_is_named(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 96, 128])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 96, 128])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]))
    (tmp_path / "model").mkdir()
    onnx.save(model, tmp_path / "model" / "net.onnx")
    stream = {
        "appsrc0": {"factory": "appsrc", "next": "mxpi_imagedecoder0"},
        "mxpi_imagedecoder0": {"factory": "mxpi_imagedecoder", "next": "mxpi_imageresize0"},
        "mxpi_imageresize0": {"factory": "mxpi_imageresize", "props": {"resizeHeight": "96", "resizeWidth": "96"},
                              "next": "mxpi_tensorinfer0"},
        "mxpi_tensorinfer0": {"factory": "mxpi_tensorinfer", "props": {"modelPath": "model/net.onnx"},
                              "next": "appsink0"},
        "appsink0": {"factory": "appsink"},
    }
    result = check_pipeline(read_pipeline(_pipeline(tmp_path, stream)), tmp_path)
    assert [(f.element, f.prop) for f in result.errors] == [("mxpi_tensorinfer0", "modelPath")]
    assert "96x128" in result.errors[0].message and "96x96" in result.errors[0].message
    stream["mxpi_imageresize0"]["props"]["resizeWidth"] = "128"
    assert not check_pipeline(read_pipeline(_pipeline(tmp_path, stream)), tmp_path).findings


@pytest.mark.parametrize("content, message", [
    ("{\n  \"s\": {\n    \"a\": {\"factory\": \"appsrc\",}\n  }\n}", "line 3"),
    ("[1, 2]", "top level must be an object"),
    ("{\"s\": 5}", "Stream 's' is not an object"),
    ("{\"s\": {\"a\": " * 300 + "1" + "}" * 600, "nested deeper"),
])
def test_broken_pipelines_are_clear_errors(tmp_path, content, message):
    path = tmp_path / "bad.pipeline"
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        read_pipeline(path)
    done = subprocess.run([sys.executable, "-m", "studio", "pipeline", "check", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_cli_check_json_and_set(ascend_fixtures, tmp_path):
    tmp_path = tmp_path / "app"  # the pipeline's paths lead one folder up: keep that inside this test's folder
    tmp_path.mkdir()
    path = _copy(ascend_fixtures, "yolov7", tmp_path)
    done = subprocess.run([sys.executable, "-m", "studio", "pipeline", "check", str(path), "--project",
                           str(tmp_path), "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["errors"] == 3 and report["project_reason"] == "given"
    (tmp_path.parent / "model").mkdir(exist_ok=True)
    for name in ("yolov7.om", "yolov7.cfg", "coco.names"):
        (tmp_path.parent / "model" / name).write_bytes(b"x")
    done = subprocess.run([sys.executable, "-m", "studio", "pipeline", "check", str(path), "--project",
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "0 error(s)" in done.stdout, done.stdout + done.stderr
    done = subprocess.run([sys.executable, "-m", "studio", "pipeline", "set", str(path),
                           "mxpi_tensorinfer0.modelPath=../model/unet.om"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert np.array(json.loads(path.read_text())["detection"]["mxpi_tensorinfer0"]["props"]["modelPath"]) \
        == "../model/unet.om"


def test_the_demo_app_pipeline_waits_only_for_its_converted_model(tmp_path):
    """The demo workspace's MindX app: the only finding is the OM the journey builds; once a
    model is there (set through `pipeline set`), the check passes and the size check agrees."""
    from studio.core.jobs import run_job
    from studio.tools.demo.models import build_unet
    from studio.tools.graph.demo import add_to_demo

    (tmp_path / "models").mkdir()
    onnx.save(build_unet(), tmp_path / "models" / "unet.onnx")
    run_job(add_to_demo(tmp_path))
    path = tmp_path / "app" / "pipeline" / "unet_simple_opencv.pipeline"
    result = check_pipeline(read_pipeline(path))
    assert result.project == (tmp_path / "app").resolve()
    assert [(f.severity, f.element, f.prop) for f in result.findings] == [("error", "mxpi_tensorinfer0", "modelPath")]
    set_prop_in_file(path, "mxpi_tensorinfer0.modelPath=../models/unet.onnx")
    assert check_pipeline(read_pipeline(path)).findings == []
