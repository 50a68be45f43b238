"""Profile, dump, benchmark and run on an Ascend "host": the real loopback sshd with the stand-in
CANN tools on the host's PATH (put there by the host toolkit's set_env.sh, as CANN does)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from standins import PY, facemask_onnx, fake_om, make_standin_toolkit, recorded, write_host
from test_cli import run_studio

from studio.runs.config import RunConfig, save_config
from studio.core.workspace import Workspace

APP = Path(__file__).resolve().parents[1] / "cann_standins" / "app" / "acl_app.py"


@pytest.fixture
def host(sshd, studio_home, tmp_path, ascend_fixtures):
    """A host "box" whose work root is a symlink to a folder with a space and a quote in its name."""
    real = tmp_path / "remote 'root'"
    real.mkdir()
    link = tmp_path / "root-link"
    link.symlink_to(real)
    toolkit = make_standin_toolkit(tmp_path / "cann", ascend_fixtures)
    write_host(studio_home, sshd, toolkit, deploy_root=str(link))
    return {"real": real, "toolkit": toolkit, "home": studio_home}


@pytest.fixture
def workspace(tmp_path, host):
    ws = Workspace.create(tmp_path / "ws")
    app_dir = tmp_path / "app dir"
    app_dir.mkdir()
    fake_om(app_dir / "facemask.om")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(APP))} --model facemask.om --frames 3"
    save_config(ws, RunConfig("facemask", command, target="box", workdir=str(app_dir)))
    save_config(ws, RunConfig("local", "echo here", target="local"))
    return ws


def test_run_configuration_on_the_host(workspace, host):
    result = run_studio("run", "facemask", "--workspace", str(workspace.folder), "--json", home=host["home"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["where"] == "box" and "[INFO] frame 2: 2 faces, 1 mask" in data["output"]


def test_profile_on_host_with_a_configuration(workspace, host, ascend_fixtures, tmp_path):
    out = tmp_path / "profiles"
    result = run_studio("profile", "run", "--host", "box", "--config", "facemask", "--workspace",
                        str(workspace.folder), "--msprof-option", "ai-core=on", "--msprof-option",
                        "aic-metrics=MemoryUB", "-o", str(out), "--json", home=host["home"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    folder = Path(data["folder"])
    assert folder.parent == out and folder.name.startswith("PROF_000001_")
    assert data["remote"].startswith(str(host["real"]))  # msprof got the real path, not the symlink
    msprof_json = next((folder / "mindstudio_profiler_output").glob("msprof_*.json"))
    assert msprof_json.read_bytes() == (ascend_fixtures / "pytorch_npu" / "trace_view.json").read_bytes()
    assert not list(out.glob(".*studio-part*"))
    stats = run_studio("profile", "stats", str(folder), "--json", home=host["home"])
    assert stats.returncode == 0 and json.loads(stats.stdout)["events"] == 4384


def test_profile_a_command_exports_when_needed(host, tmp_path):
    make_standin_toolkit(host["toolkit"], STANDIN_MSPROF_NO_EXPORT="1",
                         STANDIN_ASCEND_FIXTURES=str(Path(host["toolkit"]).parents[0]))
    out = tmp_path / "p"
    result = run_studio("profile", "run", "--host", "box", "-o", str(out), "--json", "--", "echo", "it's me",
                        home=host["home"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["exported"] is True and (Path(data["folder"]) / "mindstudio_profiler_output" / "README.txt").exists()


def test_no_npu_names_host_command_log_and_fix(host, tmp_path, ascend_fixtures):
    make_standin_toolkit(host["toolkit"], ascend_fixtures, STANDIN_NO_NPU="1")
    result = run_studio("profile", "run", "--host", "box", "-o", str(tmp_path / "p"), "--", "true",
                        home=host["home"])
    assert result.returncode == 2
    err = result.stderr
    assert "no NPU is usable on the host" in err and "box: npu-smi info" in err
    assert "/var/log/npu/slog/" in err and "npu-smi info` on the host" in err
    assert not (tmp_path / "p").exists()


def test_missing_msprof_is_explained(host, tmp_path):
    (host["toolkit"] / "set_env.sh").write_text(  # npu-smi only: a driver without the toolkit
        f"mkdir -p {tmp_path}/only; ln -sf {Path(__file__).resolve().parents[1]}/cann_standins/bin/npu-smi "
        f"{tmp_path}/only/npu-smi; export PATH={tmp_path}/only:/usr/bin:/bin PYTHONPATH={PY}\n")
    result = run_studio("profile", "run", "--host", "box", "-o", str(tmp_path / "p"), "--", "true",
                        home=host["home"])
    assert result.returncode == 2 and "msprof was not found on box" in result.stderr
    assert "tools/profiler/bin" in result.stderr and "plog" in result.stderr


def test_dump_on_host_writes_acl_json_and_brings_the_newest_tree(workspace, host, ascend_fixtures, tmp_path):
    out = tmp_path / "dumps"
    om = ascend_fixtures / "om" / "root_model.om"
    # The app loads facemask.om; the local copy of that model names the dump_list entry.
    local_om = tmp_path / "facemask.om"
    local_om.write_bytes(om.read_bytes())
    result = run_studio("dump", "--host", "box", "--config", "facemask", "--workspace", str(workspace.folder),
                        "--model", str(local_om), "--mode", "all", "-o", str(out), "--json", home=host["home"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    folder = Path(data["folder"])
    assert folder.parts[-4:] == ("0", "facemask", "1", "2")  # device, model, model id, the last frame
    assert sorted(p.name.split(".")[0] for p in folder.iterdir()) == ["Conv2D", "Relu"]
    acl = json.loads((tmp_path / "app dir" / "acl.json").read_text())["dump"]
    assert acl["dump_path"].startswith(str(host["real"])) and acl["dump_mode"] == "all"
    assert acl["dump_list"] == [{"model_name": "facemask"}]
    converted = run_studio("dump", "convert", str(next(folder.glob("Relu.*"))), "-o", str(tmp_path / "npy"),
                           "--json", home=host["home"])
    assert converted.returncode == 0, converted.stderr


@pytest.mark.parametrize("tool", ["msame", "ais_bench", "msit"])
def test_bench_om_on_host(host, tmp_path, tool):
    om = fake_om(tmp_path / "face mask.om")
    result = run_studio("bench", str(om), "--host", "box", "--tool", tool, "--loop", "20", "--json",
                        home=host["home"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    times = recorded(host["toolkit"])[-1]["times"]
    import numpy as np

    expected = np.array(times[1:] if tool == "msame" else times)
    assert data["mean_ms"] == pytest.approx(expected.mean(), abs=1e-6)
    assert data["p99_ms"] == pytest.approx(np.percentile(expected, 99))
    assert data["where"] == "box" and data["model"] == str(om)


def test_upload_first_then_run(workspace, host, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    fake_om(project / "facemask.om")
    remote = tmp_path / "deployed"
    added = run_studio("deploy", "add", "fm", "--host", "box", "--local", str(project), "--remote", str(remote),
                       home=host["home"])
    assert added.returncode == 0, added.stderr
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(APP))} --model facemask.om --frames 1"
    save_config(Workspace.open(workspace.folder),
                RunConfig("deployed", command, target="box", workdir=str(remote), upload="fm"))
    result = run_studio("run", "deployed", "--workspace", str(workspace.folder), "--json", home=host["home"])
    assert result.returncode == 0, result.stderr
    assert "uploading deployment fm first" in result.stderr and "facemask.om" in result.stderr  # the plan
    assert (remote / "facemask.om").read_bytes() == (project / "facemask.om").read_bytes()
    assert "[INFO] frame 0: 2 faces, 1 mask" in json.loads(result.stdout)["output"]


def test_dump_on_host_and_compare_with_the_cpu(workspace, host, ascend_fixtures, tmp_path):
    import numpy as np

    reference = facemask_onnx(tmp_path / "facemask.onnx")
    image = tmp_path / "image.npy"
    x = np.random.default_rng(5).standard_normal((1, 4, 8, 8)).astype(np.float32)
    np.save(image, x)
    command = (f"{shlex.quote(sys.executable)} {shlex.quote(str(APP))} --model facemask.om --frames 1 "
               f"--input image.npy")  # the app reads the uploaded array from its folder
    save_config(Workspace.open(workspace.folder), RunConfig("withinput", command, target="box",
                                                            workdir=str(tmp_path / "app dir")))
    om = tmp_path / "facemask.om"
    om.write_bytes((ascend_fixtures / "om" / "root_model.om").read_bytes())
    out = tmp_path / "j3"
    result = run_studio("dump", "--host", "box", "--config", "withinput", "--workspace", str(workspace.folder),
                        "--model", str(om), "--reference", str(reference), "--npy", f"x={image}", "-o", str(out),
                        "--json", home=host["home"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (tmp_path / "app dir" / "image.npy").read_bytes() == image.read_bytes()
    assert Path(data["csv"]).is_file() and Path(data["cpu_dump"]).is_dir()
    rows = {r["name"]: r for r in data["compare"]["rows"] if r.get("cosine") is not None}
    assert {"conv1", "relu1"} <= set(rows)
    # Independent check: the NPU side rounded conv1 through FP16; the CPU did not.
    npu = (x * np.float32(0.5)).astype(np.float16).astype(np.float64)
    cpu = (x * np.float32(0.5)).astype(np.float64)
    cosine = float(np.dot(npu.ravel(), cpu.ravel()) / (np.linalg.norm(npu) * np.linalg.norm(cpu)))
    assert rows["conv1"]["cosine"] == pytest.approx(cosine, abs=1e-9)
    assert rows["conv1"]["max_abs_err"] == pytest.approx(float(np.abs(npu - cpu).max()), rel=1e-6)
    assert data["compare"]["passed"] is True


def test_bench_compare_with_the_original_model(host, tmp_path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((16, 16), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "mm.onnx")
    om = fake_om(tmp_path / "mm.om")
    missing = run_studio("bench", str(om), "--host", "box", "--compare-with", str(tmp_path / "mm.onnx"),
                         "--loop", "8", home=host["home"])
    assert missing.returncode == 2 and "--input-shape" in missing.stderr  # the dynamic dim is asked for
    assert len(recorded(host["toolkit"])) == 0  # before the host was busy
    out = tmp_path / "side by side"
    result = run_studio("bench", str(om), "--host", "box", "--compare-with", str(tmp_path / "mm.onnx"),
                        "--input-shape", "x=4,16", "--loop", "8", "--warmup", "1", "-o", str(out), "--json",
                        home=host["home"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    times = np.array(recorded(host["toolkit"])[-1]["times"][1:])
    here = data["compare_with"]
    assert data["mean_ms"] == pytest.approx(times.mean(), abs=1e-6) and data["where"] == "box"
    assert here["tool"] == "onnxruntime" and here["loops"] == 8 and here["batch"] == 4
    assert here["mean_ms"] == pytest.approx(np.mean(here["latencies_ms"]))
    rows = {r["figure"]: r for r in data["comparison"]}
    assert rows["mean_ms"]["speedup"] == pytest.approx(here["mean_ms"] / data["mean_ms"])
    assert (out / "npu" / "studio_profile.json").is_file() and (out / "onnxruntime" / "studio_profile.json").is_file()
    text = run_studio("bench", str(om), "--host", "box", "--compare-with", str(tmp_path / "mm.onnx"),
                      "--input-shape", "x=4,16", "--loop", "8", home=host["home"])
    assert text.returncode == 0 and "original model here:" in text.stdout and "speed-up" in text.stdout


def test_a_configurations_own_toolkit_wins_over_the_hosts(sshd, studio_home, tmp_path, ascend_fixtures):
    toolkit = make_standin_toolkit(tmp_path / "cann", ascend_fixtures)
    write_host(studio_home, sshd, tmp_path / "no toolkit here")  # the host's own setting is wrong
    ws = Workspace.create(tmp_path / "ws")
    save_config(ws, RunConfig("own", "echo profiled", target="box", toolkit=str(toolkit)))
    result = run_studio("profile", "run", "--host", "box", "--config", "own", "--workspace", str(ws.folder),
                        "-o", str(tmp_path / "p"), "--json", home=studio_home)
    assert result.returncode == 0, result.stderr
    assert Path(json.loads(result.stdout)["folder"]).name.startswith("PROF_")
