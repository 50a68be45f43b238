"""`studio pipeline check FILE --host NAME`: the pipeline's files are looked up where the app runs,
through the deployment that syncs the project (the real loopback sshd)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from standins import write_host
from test_cli import run_studio

PIPELINE = "mindx_pipeline/mindxsdk-referenceapps/mxVision/InferOfflineVideo/regular/pipeline/regular.pipeline"
FILES = ["models/yolov3/yolov3_tf_bs1_fp16.om", "models/yolov3/yolov3_tf_bs1_fp16.cfg", "models/yolov3/coco.names"]


def _project(tmp_path: Path, real_profiles: Path) -> Path:
    project = tmp_path / "app"
    (project / "pipeline").mkdir(parents=True)
    shutil.copy(real_profiles / PIPELINE, project / "pipeline" / "regular.pipeline")
    (project / "main.py").write_text("# the app\n")
    return project


def test_files_are_checked_on_the_host_through_the_deployment(sshd, studio_home, tmp_path, real_profiles):
    project = _project(tmp_path, real_profiles)
    remote = tmp_path / "remote side" / "app"  # a space: every remote path is quoted
    for name in FILES[:2]:  # the labels file was never deployed
        (remote / name).parent.mkdir(parents=True, exist_ok=True)
        (remote / name).write_text("x")
    write_host(studio_home, sshd)
    added = run_studio("deploy", "add", "app", "--host", "box", "--local", str(tmp_path), "--remote",
                       str(tmp_path / "remote side"), home=studio_home)
    assert added.returncode == 0, added.stderr
    pipeline = project / "pipeline" / "regular.pipeline"

    here = run_studio("pipeline", "check", str(pipeline), "--json", home=studio_home)
    local_missing = {f["message"].split()[0] for f in json.loads(here.stdout)["findings"]
                     if f["prop"] in ("modelPath", "postProcessConfigPath", "labelPath")}
    assert local_missing == {f"./{name}" for name in FILES}  # nothing of it is here

    there = run_studio("pipeline", "check", str(pipeline), "--host", "box", "--json", home=studio_home)
    assert there.returncode == 1, there.stderr  # one file is missing there: an error
    data = json.loads(there.stdout)
    assert data["host"] == {"name": "box", "project": str(remote)}  # app/ under the deployment's remote root
    missing = [f for f in data["findings"] if f["prop"] in ("modelPath", "postProcessConfigPath", "labelPath")]
    assert [(f["prop"], f["severity"]) for f in missing] == [("labelPath", "error")]
    assert str(remote / FILES[2]) in missing[0]["message"] and "box" in missing[0]["message"]

    (remote / FILES[2]).write_text("person\n")
    text = run_studio("pipeline", "check", str(pipeline), "--host", "box", home=studio_home)
    assert "files checked on box in " + str(remote) in text.stdout
    assert "not found" not in text.stdout


def test_without_a_deployment_the_message_says_how_to_map(sshd, studio_home, tmp_path, real_profiles):
    project = _project(tmp_path, real_profiles)
    write_host(studio_home, sshd)
    result = run_studio("pipeline", "check", str(project / "pipeline" / "regular.pipeline"), "--host", "box",
                        home=studio_home)
    assert result.returncode == 2 and "No deployment syncs" in result.stderr and "--remote-project" in result.stderr
    given = run_studio("pipeline", "check", str(project / "pipeline" / "regular.pipeline"), "--host", "box",
                       "--remote-project", str(tmp_path / "nowhere"), "--json", home=studio_home)
    data = json.loads(given.stdout)
    assert data["host"]["project"] == str(tmp_path / "nowhere")
    assert sum(f["prop"] == "modelPath" and "not found on box" in f["message"] for f in data["findings"]) == 1
