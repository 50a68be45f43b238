"""Studio's engine on a host that reaches no package index: the real loopback sshd, whose sessions
get a pip pointed at a closed port (and no pip config files), so every wheel must come from here.

Without ``--engine-wheels upload`` the bootstrap fails and says how to fix it; with it, the
dependency wheels are downloaded here for the host's Python, uploaded, installed with
``--no-index``, and a profile then runs there.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import onnx
import pytest

from standins import write_host
from test_cli import run_studio

pytestmark = pytest.mark.slow

# Port 9 (discard) is closed on the loopback; no retries, a short timeout: pip fails fast.
NO_INDEX_ENV = ("SetEnv PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=http://127.0.0.1:9/simple/ "
                "PIP_RETRIES=0 PIP_DEFAULT_TIMEOUT=3 PIP_NO_CACHE_DIR=1")


@pytest.fixture
def offline_host(tmp_path, studio_home):
    """A host entry "offline" for a private sshd whose pip has no index; its engine root has a space."""
    from sshd_server import require_sshd, start_sshd

    require_sshd()
    server = start_sshd(tmp_path / "sshd", extra_config=[NO_INDEX_ENV])
    root = tmp_path / "engine root"
    write_host(studio_home, server, name="offline", engine_root=str(root))
    yield server, root
    server.stop()


def test_the_host_really_has_no_index(offline_host):
    """The set-up itself: pip on that host cannot install anything (else the test below proves nothing)."""
    import subprocess

    server, _ = offline_host
    done = subprocess.run(["ssh", "-p", str(server.port), "-i", str(server.client_key), "-o", "BatchMode=yes",
                           "-o", f"UserKnownHostsFile={server.known_hosts}", f"{server.user}@{server.host}",
                           "python3 -m pip download --no-deps -d /tmp/studio-no-index-probe msgspec"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout
    assert "127.0.0.1:9" in done.stdout + done.stderr or "No matching distribution" in done.stderr


def test_bootstrap_with_uploaded_wheels_then_profile(offline_host, studio_home, tmp_path):
    server, root = offline_host
    model = tmp_path / "cls.onnx"
    from studio.tools.demo.models import build_classifier

    onnx.save(build_classifier(), str(model))

    # From the host's own index: refused, with the option that fixes it named.
    refused = run_studio("profile", "run", str(model), "--host", "offline", "-o", str(tmp_path / "p0"),
                         home=studio_home, timeout=600)
    assert refused.returncode != 0
    assert "--engine-wheels upload" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    print(refused.stderr[-1500:])

    # Uploaded from here: the venv is made, every dependency installed without an index.
    start = time.monotonic()
    out = tmp_path / "profile out"
    done = run_studio("profile", "run", str(model), "--host", "offline", "--engine-wheels", "upload",
                      "-o", str(out), "--iterations", "3", "--json", home=studio_home, timeout=900)
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    ran_on = data["ran_on"]
    assert ran_on["host"] == "offline" and ran_on["engine_reused"] is False
    assert any(a.startswith("installed ") and "onnxruntime==" in a for a in ran_on["engine_actions"])
    print(f"bootstrap with uploaded wheels + profile: {seconds:.1f} s")

    # What the host installed is what this computer pins, and the wheels it used are on the host.
    from studio.runs.engine_wheel import engine_pins

    folders = [p for p in root.iterdir() if (p / "venv").is_dir()]
    assert len(folders) == 1
    uploaded = {p.name.split("-")[0].lower() for p in (folders[0] / "wheels" / "deps").glob("*.whl")}
    for name in engine_pins():
        assert name.replace("-", "_").lower() in uploaded, f"{name} was not uploaded: {sorted(uploaded)}"
    marker = json.loads((folders[0] / "studio-env.json").read_text())
    assert marker["pins"] == engine_pins()

    # The profile really ran there: its trace is in the fetched folder, with the iterations asked for.
    assert data["folder"] == str(out) and Path(data["folder"]).is_dir()
    traces = list(out.rglob("*.json"))
    assert traces, f"no trace fetched into {out}"

    # A second run reuses the environment: still no index needed, nothing installed.
    again = run_studio("profile", "run", str(model), "--host", "offline", "-o", str(tmp_path / "p2"), "--json",
                       home=studio_home, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["ran_on"]["engine_reused"] is True
