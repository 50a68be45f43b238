"""ATC on both targets — this computer and the real test sshd — with a stand-in atc (convert_remote_helpers.py)."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

import onnx
import pytest

from convert_helpers import conv_bn_model
from convert_remote_helpers import make_toolkit

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, run_job
from studio.remote.hosts import HostEntry
from studio.remote.known_hosts import KnownHosts, UnknownHostKey
from studio.targets import LocalTarget, SshTarget
from studio.targets.base import workdir_script
from studio.ops.atc import AtcFailed, run_atc
from studio.tools.convert.options import ConvertOptions


class Place:
    """Makes the target under test: this computer, or the test sshd (same toolkit, same root)."""

    def __init__(self, kind: str, sshd_host, toolkit: Path, root: Path):
        self.kind, self.sshd_host, self.toolkit, self.root = kind, sshd_host, toolkit, root

    def target(self, toolkit: Path | None = None, root: Path | None = None, known: KnownHosts | None = None):
        toolkit, root = str(toolkit or self.toolkit), str(root or self.root)
        if self.kind == "local":
            return LocalTarget(toolkit=toolkit, work_root=root)
        entry, default_known = self.sshd_host
        entry = replace(entry, toolkit=toolkit, extra={"deploy_root": root})
        return SshTarget(entry, known or default_known)


@pytest.fixture(params=["local", "ssh"])
def remote(request, tmp_path, ascend_fixtures):
    """(Place making targets with the stand-in toolkit and a symlinked work root, toolkit, real root)."""
    sshd_host = request.getfixturevalue("sshd_host") if request.param == "ssh" else None
    toolkit = make_toolkit(tmp_path / "cann", ascend_fixtures / "om" / "root_model.om")
    real_root = tmp_path / "remote-real"
    real_root.mkdir()
    (tmp_path / "remote-link").symlink_to(real_root)
    return Place(request.param, sshd_host, toolkit, tmp_path / "remote-link"), toolkit, real_root


def _model(folder: Path, name: str = "net.onnx") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    onnx.save(conv_bn_model(size=16), path)
    return path


def test_success_end_to_end_om_arrives_and_opens(remote, tmp_path, ascend_fixtures):
    place, toolkit, real_root = remote
    model = _model(tmp_path / "local")
    options = ConvertOptions(model=model, output=tmp_path / "out" / "net.om", soc_version="Ascend310",
                             input_shape="image:1,3,16,16")
    lines: list[str] = []
    result = run_job(run_atc(options, place.target()), on_progress=lambda p: lines.append(p.message))
    local_om = tmp_path / "out" / "net.om"
    assert result.ok and result.local_om == local_om
    assert local_om.read_bytes() == (ascend_fixtures / "om" / "root_model.om").read_bytes()
    assert [p.name for p in local_om.parent.iterdir()] == ["net.om"]  # no temporary left behind
    # The work folder is the symlink-free path under the deploy root; atc ran there.
    assert result.work_dir.startswith(str(real_root.resolve()) + "/atc/")
    assert (toolkit / "last_cwd").read_text().strip() == result.work_dir
    assert "ATC run success, welcome to the next use." in lines  # streamed line by line
    assert "ATC run success" in Path(result.log).read_text()
    args = (toolkit / "last_args").read_text()
    assert f"--model={result.work_dir}/net.onnx" in args and "--soc_version=Ascend310" in args
    assert not list(Path(result.work_dir).glob("*.part-*"))
    from studio.tools.graph.reader import read_model

    assert read_model(local_om).graphs  # the graph panel's reader opens what came back


def test_atc_failure_is_explained_with_its_code_and_log(remote, tmp_path):
    place, _toolkit, _root = remote
    options = ConvertOptions(model=_model(tmp_path / "local"), output=tmp_path / "out" / "net.om",
                             soc_version="Ascend310", input_shape="image:1,3,99999,16")
    with pytest.raises(AtcFailed) as caught:
        run_job(run_atc(options, place.target()))
    text = str(caught.value)
    assert "E10001" in text and "invalid value" in text  # the code and what it means
    assert caught.value.result.log in text and "plog" in text
    assert caught.value.result.returncode == 1
    assert not (tmp_path / "out" / "net.om").exists()


def test_cancel_mid_run_kills_remote_atc_and_leaves_no_local_file(remote, tmp_path):
    place, toolkit, _root = remote
    (toolkit / "SLOW").write_text("")
    out = tmp_path / "out"
    out.mkdir()
    options = ConvertOptions(model=_model(tmp_path / "local"), output=out / "net.om", soc_version="Ascend310")
    token = CancelToken()

    def on_progress(step) -> None:
        if step.message.startswith("compiling op 3"):
            token.cancel()

    with pytest.raises(Cancelled):
        run_job(run_atc(options, place.target(), cancel=token), token, on_progress)
    pid = int((toolkit / "atc.pid").read_text())
    for _ in range(100):  # the kill is sent before the job returns; the process may take a moment
        if not _alive(pid):
            break
        threading.Event().wait(0.05)
    assert not _alive(pid)
    assert list(out.iterdir()) == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


def test_unknown_host_key_is_refused_before_anything_runs(remote, tmp_path):
    place, toolkit, real_root = remote
    if place.kind == "local":
        pytest.skip("host keys exist only on the SSH target")
    options = ConvertOptions(model=_model(tmp_path / "local"), output=tmp_path / "net.om", soc_version="Ascend310")
    with pytest.raises(UnknownHostKey):
        run_job(run_atc(options, place.target(known=KnownHosts(read_only=[], own=tmp_path / "known"))))
    assert not (toolkit / "last_args").exists() and list(real_root.iterdir()) == []


def test_awkward_paths_are_quoted_everywhere(remote, tmp_path, ascend_fixtures):
    place, toolkit, _root = remote
    model = _model(tmp_path / "my models" / "it's (v2)", "net $x 'q' ;ls.onnx")
    out = tmp_path / "out dir" / "res`u`lt's.om"
    options = ConvertOptions(model=model, output=out, soc_version="Ascend310")
    result = run_job(run_atc(options, place.target(root=tmp_path / "deploy root $HOME")))
    assert out.read_bytes() == (ascend_fixtures / "om" / "root_model.om").read_bytes()
    assert result.work_dir.startswith(str(tmp_path / "deploy root $HOME" / "atc"))
    assert (Path(result.work_dir) / "net $x 'q' ;ls.onnx").is_file()


def test_missing_toolkit_or_atc_says_how_to_fix(remote, tmp_path):
    place, _toolkit, _root = remote
    options = ConvertOptions(model=_model(tmp_path / "local"), output=tmp_path / "net.om", soc_version="Ascend310")
    with pytest.raises(UserError) as caught:
        run_job(run_atc(options, place.target(toolkit=tmp_path / "nowhere")))
    assert "No CANN toolkit" in caught.value.what and "toolkit" in caught.value.fix
    if place.kind == "ssh":
        assert "--toolkit" in caught.value.fix and "studio ssh test" in caught.value.fix
    empty = tmp_path / "empty-cann"
    empty.mkdir()
    (empty / "set_env.sh").write_text("export NOTHING=1\n")
    with pytest.raises(UserError) as caught:
        run_job(run_atc(options, place.target(toolkit=empty)))
    assert "atc is not on PATH" in caught.value.what


def test_options_are_checked_before_connecting(tmp_path):
    # An address nothing listens on: the ATC rule fails first, so no connection is tried.
    entry = HostEntry(name="nowhere", host="127.0.0.1", port=9)
    options = ConvertOptions(model=_model(tmp_path), output=tmp_path / "net.om", soc_version=None)
    with pytest.raises(UserError, match="soc_version"):
        run_job(run_atc(options, SshTarget(entry, KnownHosts(read_only=[], own=tmp_path / "k"))))


def test_default_work_folder_is_under_home():
    target = SshTarget(HostEntry(name="box", host="h"))
    assert target.work_root() == "~/.studio" and target.key == "host:box"
    assert workdir_script(target.work_root(), "atc/20260101-000000-net") == \
        "cd && mkdir -p -- .studio/atc/20260101-000000-net && cd -- .studio/atc/20260101-000000-net && pwd -P"
