"""``studio quantize ... --ascend DIR --host NAME`` as a user runs it: the search here, then AMCT and
ATC (the stand-ins of tests/cann_standins) on the real loopback sshd through the operations layer,
and the deployable model, the .om and the run's report fetched back into DIR."""

from __future__ import annotations

import json
import re

import numpy as np

from convert_remote_helpers import make_quantize_toolkit
from quantize_helpers import chain_model, samples
from standins import fake_om, write_host
from test_cli import run_studio


def _skipped_in(text: str, pattern: str) -> list[str]:
    return re.findall(pattern, text, re.M)


def test_quantize_runs_amct_and_atc_on_the_host_and_fetches_what_they_wrote(sshd, studio_home, tmp_path):
    om = fake_om(tmp_path / "stand-in.om")
    toolkit = make_quantize_toolkit(tmp_path / "cann", om)
    host = write_host(studio_home, sshd, toolkit, deploy_root=str(tmp_path / "host root"))
    model = tmp_path / "my model" / "chain.onnx"
    model.parent.mkdir()
    chain_model(model, outlier_at=2)  # one channel of mm2's input carries a 10,000-fold outlier
    feeds = samples(8, 1)
    np.savez(tmp_path / "calib.npz", x=np.concatenate([s["x"] for s in feeds]))
    folder = tmp_path / "for ascend"
    done = run_studio("quantize", str(model), "-o", str(tmp_path / "q.onnx"), "--calib", str(tmp_path / "calib.npz"),
                      "--min-cosine", "0.99", "--no-timing", "--ascend", str(folder), "--soc", "Ascend910B1",
                      "--host", host, "--json", home=studio_home, timeout=60)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)

    # The rollback set: the outlier layer alone, as the model was built to need.
    assert data["fallback"] == ["mm2"]
    # What came back: the .om ATC wrote, AMCT's deployable model (the stand-in copies the model it was
    # given: the uploaded one), and the run's report.
    assert (folder / "chain_int8.om").read_bytes() == om.read_bytes()
    assert (folder / "amct_out" / "chain_deploy_model.onnx").read_bytes() == model.read_bytes()
    report = (folder / "quantize_ascend.log").read_text()
    assert _skipped_in(report, r"AMCT: skip layer (\S+) \(kept in float\)$") == data["fallback"]
    assert "AMCT: calibration of chain.onnx on 8 batch(es)" in report and "ATC run success" in report
    assert _skipped_in((folder / "amct.cfg").read_text(), r'^skip_layers: "(.*)"$') == data["fallback"]
    # ATC ran on the host, in the work folder under the host's deploy root, on AMCT's output.
    atc_args = (toolkit / "last_args").read_text().split()
    assert "--model=amct_out/chain_deploy_model.onnx" in atc_args and "--soc_version=Ascend910B1" in atc_args
    assert (toolkit / "last_cwd").read_text().strip().startswith(str((tmp_path / "host root").resolve()))
    ascend = data["ascend"]
    assert ascend["ran_on"] == host and ascend["work"].startswith(str((tmp_path / "host root").resolve()))
    assert ascend["om_local"] == str(folder / "chain_int8.om")
    assert ascend["deploy_model_local"] == str(folder / "amct_out" / "chain_deploy_model.onnx")
