"""``studio convert MODEL --atc --host NAME`` as a user runs it, against the test sshd + stand-in atc."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx

from convert_helpers import conv_bn_model
from convert_remote_helpers import make_toolkit
from test_cli import run_studio


def _host(studio_home: Path, sshd, toolkit: Path, deploy_root: Path) -> None:
    """A host entry written the way `studio ssh add` + a deploy_root line would, and its key trusted."""
    config = studio_home / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "hosts.toml").write_text(
        f'[hosts.box]\nhost = "{sshd.host}"\nport = {sshd.port}\nuser = "{sshd.user}"\nauth = "key"\n'
        f'key_file = "{sshd.client_key}"\ntoolkit = "{toolkit}"\ndeploy_root = "{deploy_root}"\n')
    shutil.copy(sshd.known_hosts, config / "known_hosts")


def test_remote_atc_streams_and_downloads_then_failure_exits_1(sshd, studio_home, tmp_path, ascend_fixtures):
    fixture_om = ascend_fixtures / "om" / "root_model.om"
    _host(studio_home, sshd, make_toolkit(tmp_path / "cann", fixture_om), tmp_path / "deploy")
    model = tmp_path / "net.onnx"
    onnx.save(conv_bn_model(size=16), model)
    out = tmp_path / "out" / "net.om"
    ok = run_studio("convert", str(model), "--atc", "--soc-version", "Ascend310", "--host", "box", "-o", str(out),
                    home=studio_home)
    assert ok.returncode == 0, ok.stderr
    assert "ATC run success, welcome to the next use." in ok.stdout.splitlines()
    assert f"wrote {out} (ATC on box)" in ok.stdout
    assert out.read_bytes() == fixture_om.read_bytes()

    failed = run_studio("convert", str(model), "--atc", "--soc-version", "Ascend310", "--host", "box",
                        "--input-shape", "image:1,3,99999,16", "-o", str(tmp_path / "bad.om"), "--json",
                        home=studio_home)
    assert failed.returncode == 1
    result = json.loads(failed.stdout)
    assert result["ok"] is False and result["messages"][-1]["code"] == "E10001"
    assert "E10001" in failed.stderr and result["log"] in failed.stderr
    assert not (tmp_path / "bad.om").exists()


def test_unknown_host_and_no_local_atc_say_what_to_do(studio_home, tmp_path):
    model = tmp_path / "net.onnx"
    onnx.save(conv_bn_model(size=16), model)
    unknown = run_studio("convert", str(model), "--atc", "--soc-version", "Ascend310", "--host", "nope",
                         home=studio_home)
    assert unknown.returncode == 2 and "studio ssh add nope" in unknown.stderr
    if shutil.which("atc") is None:  # the machine has no CANN: the command is printed with the way out
        local = run_studio("convert", str(model), "--atc", "--soc-version", "Ascend310", home=studio_home)
        assert local.returncode == 2 and local.stdout.startswith(f"atc --model={model} ")
        assert "--host NAME" in local.stderr
